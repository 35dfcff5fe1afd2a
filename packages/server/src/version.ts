import manifest from '../package.json' with { type: 'json' };

/** This package's version, in every result's attestation. */
export const version: string = manifest.version;
