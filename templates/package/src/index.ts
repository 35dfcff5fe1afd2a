export { TemplatePackageError, isTemplatePackageError } from './errors.js';
export type { TemplatePackageErrorCode } from './errors.js';
export { runTemplatePackage, templatePackageOptionsSchema } from './template-package.js';
export type { TemplatePackageOptions, TemplatePackageResult } from './template-package.js';
