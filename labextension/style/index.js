import './base.css';
import './review.css';
