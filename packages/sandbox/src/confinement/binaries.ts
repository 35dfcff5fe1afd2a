import { TrustedBinaryError, resolveTrustedBinary } from '@karotte/base';
import { SandboxError } from '../errors.js';

/** The trusted system binaries a sandbox composes (no compiler, no native code). */
export interface SandboxBinaries {
  readonly bash: string;
  readonly sh: string;
  readonly unshare: string;
  readonly nsenter: string;
  readonly setpriv: string;
  readonly mount: string;
  readonly umount: string;
  readonly mkdir: string;
  readonly ip: string;
  readonly env: string;
  readonly cat: string;
  readonly prlimit: string;
  /** Loads the syscall filter (programs/seccomp.pl): perl-base is essential on Debian and Ubuntu. */
  readonly perl: string;
}

const NAMES = [
  'bash',
  'sh',
  'unshare',
  'nsenter',
  'setpriv',
  'mount',
  'umount',
  'mkdir',
  'ip',
  'env',
  'cat',
  'prlimit',
  'perl',
] as const;

/** Which package provides each binary, for the error message. */
const PROVIDERS: Record<(typeof NAMES)[number], string> = {
  bash: 'bash',
  sh: 'dash or bash',
  unshare: 'util-linux',
  nsenter: 'util-linux',
  setpriv: 'util-linux',
  mount: 'util-linux (mount)',
  umount: 'util-linux (mount)',
  mkdir: 'coreutils',
  ip: 'iproute2',
  env: 'coreutils',
  cat: 'coreutils',
  prlimit: 'util-linux',
  perl: 'perl-base',
};

/**
 * Resolve every binary the sandbox runs from the fixed root-owned directories (never PATH).
 * @throws SandboxError `HOST_UNSUPPORTED` naming each missing or untrusted binary.
 */
export function resolveSandboxBinaries(): SandboxBinaries {
  const found: Partial<Record<(typeof NAMES)[number], string>> = {};
  const missing: string[] = [];
  for (const name of NAMES) {
    try {
      found[name] = resolveTrustedBinary(name);
    } catch (error) {
      if (TrustedBinaryError.isInstance(error))
        missing.push(`${name} (${PROVIDERS[name]}): ${error.message}`);
      else throw error;
    }
  }
  if (missing.length > 0) {
    throw new SandboxError('HOST_UNSUPPORTED', `missing trusted binaries: ${missing.join('; ')}`, {
      missing,
    });
  }
  return found as SandboxBinaries;
}
