import { LabIcon } from '@jupyterlab/ui-components';

import rlmSvg from '../style/rlm.svg';

export const rlmIcon = new LabIcon({ name: 'rlm-kernel:runs', svgstr: rlmSvg });
