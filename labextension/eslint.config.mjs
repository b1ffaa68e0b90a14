import js from '@eslint/js';
import tseslint from 'typescript-eslint';

// Run text is untrusted (src/safe.ts): it reaches the DOM as text only, never as markup.
const MARKUP = ['innerHTML', 'outerHTML', 'insertAdjacentHTML', 'createContextualFragment', 'srcdoc'].map(
  property => ({ property, message: 'Set textContent instead: run text is untrusted (see src/safe.ts).' })
);

export default tseslint.config(
  { ignores: ['lib/', 'node_modules/', '../rlm_kernel/labextension/', '*.config.js', '*.config.mjs', 'style/'] },
  js.configs.recommended,
  ...tseslint.configs.strictTypeChecked,
  {
    languageOptions: {
      parserOptions: { project: './tsconfig.test.json', tsconfigRootDir: import.meta.dirname }
    },
    rules: {
      '@typescript-eslint/restrict-template-expressions': ['error', { allowNumber: true }],
      '@typescript-eslint/no-unnecessary-condition': 'off',
      // Lumino's signal.connect(this.method, this) binds `this` itself.
      '@typescript-eslint/unbound-method': 'off',
      '@typescript-eslint/no-confusing-void-expression': 'off',
      '@typescript-eslint/no-extraneous-class': 'off',
      eqeqeq: 'error',
      curly: 'error',
      'no-restricted-properties': [
        'error',
        ...MARKUP,
        { object: 'document', property: 'write', message: 'Run text is untrusted (see src/safe.ts).' }
      ]
    }
  },
  {
    // Tests assert what they expect to exist; a failed `!` fails the test loudly, which is the point.
    files: ['src/__tests__/**'],
    rules: { '@typescript-eslint/no-non-null-assertion': 'off' }
  }
);
