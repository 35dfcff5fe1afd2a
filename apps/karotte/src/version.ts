import pkg from '../package.json' with { type: 'json' };

/** The app's version, from its package.json. */
export const VERSION: string = pkg.version;
