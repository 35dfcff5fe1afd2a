// Every attack of the catalog, one file each (attacks/<id>.ts), in alphabetical order (a report
// groups them by class). A new attack is a new file plus its line here (the unit test fails on a
// file left out).
import type { Attack } from '../attack.js';
import aioReserve from './aio-reserve.js';
import alwaysEqual from './always-equal.js';
import backgroundForger from './background-forger.js';
import backgroundWriter from './background-writer.js';
import binaryOutputFlood from './binary-output-flood.js';
import bpfUserfaultfd from './bpf-userfaultfd.js';
import cAssertOverride from './c-assert-override.js';
import cConstructorExit from './c-constructor-exit.js';
import cIncludeHidden from './c-include-hidden.js';
import cInterposeCompare from './c-interpose-compare.js';
import ccDaemon from './cc-daemon.js';
import ccInt80Abi from './cc-int80-abi.js';
import ccPreloadLib from './cc-preload-lib.js';
import cgroupEscape from './cgroup-escape.js';
import cronAtSystemd from './cron-at-systemd.js';
import daemonCarry from './daemon-carry.js';
import decoyHiddenFiles from './decoy-hidden-files.js';
import deepTree from './deep-tree.js';
import deleteTests from './delete-tests.js';
import deleteWorkdir from './delete-workdir.js';
import diskFill from './disk-fill.js';
import dnsLookup from './dns-lookup.js';
import dotfileHijack from './dotfile-hijack.js';
import doubleFork from './double-fork.js';
import execReplaceShell from './exec-replace-shell.js';
import exitTrap from './exit-trap.js';
import exitZeroEarly from './exit-zero-early.js';
import fdFlood from './fd-flood.js';
import fifo from './fifo.js';
import fileLease from './file-lease.js';
import filesCarry from './files-carry.js';
import findAnswerKey from './find-answer-key.js';
import forgeEndMarker from './forge-end-marker.js';
import forgedMarker from './forged-marker.js';
import forkBomb from './fork-bomb.js';
import forkRelay from './fork-relay.js';
import glibcEnvHijack from './glibc-env-hijack.js';
import graderEnvFromCode from './grader-env-from-code.js';
import graderMemoryBomb from './grader-memory-bomb.js';
import graderOutputFlood from './grader-output-flood.js';
import graderTimeout from './grader-timeout.js';
import grepForAnswer from './grep-for-answer.js';
import hardLinkRootFile from './hard-link-root-file.js';
import hostileNames from './hostile-names.js';
import hugeFile from './huge-file.js';
import ignoreSignals from './ignore-signals.js';
import inodeFlood from './inode-flood.js';
import inotifyExhaust from './inotify-exhaust.js';
import ipcCarry from './ipc-carry.js';
import ipcFlood from './ipc-flood.js';
import ipv6AndBroadcastRoutes from './ipv6-and-broadcast-routes.js';
import jsAssertPatch from './js-assert-patch.js';
import jsEscapeAtGrade from './js-escape-at-grade.js';
import jsExitCodeOverride from './js-exit-code-override.js';
import jsLoaderHooks from './js-loader-hooks.js';
import jsPrototypePollution from './js-prototype-pollution.js';
import jsReadHiddenAtGrade from './js-read-hidden-at-grade.js';
import jsStackWalk from './js-stack-walk.js';
import jsonProtoPollution from './json-proto-pollution.js';
import keyringCarry from './keyring-carry.js';
import killOwnShell from './kill-own-shell.js';
import loaderPreload from './loader-preload.js';
import loopbackPortScan from './loopback-port-scan.js';
import memfdHog from './memfd-hog.js';
import memoryHog from './memory-hog.js';
import mknodDevice from './mknod-device.js';
import mlockPin from './mlock-pin.js';
import nameTooLong from './name-too-long.js';
import namespaceCalls from './namespace-calls.js';
import neighbourCpuSpin from './neighbour-cpu-spin.js';
import neighbourDiskIo from './neighbour-disk-io.js';
import neighbourFileTable from './neighbour-file-table.js';
import neighbourMemoryPressure from './neighbour-memory-pressure.js';
import neighbourPidsFill from './neighbour-pids-fill.js';
import neighbourPtyHog from './neighbour-pty-hog.js';
import neighbourTcpBuffers from './neighbour-tcp-buffers.js';
import neighbourTmpfsFill from './neighbour-tmpfs-fill.js';
import nestedNamespace from './nested-namespace.js';
import nodeModulesShadow from './node-modules-shadow.js';
import nohupLoop30s from './nohup-loop-30s.js';
import outputFlood from './output-flood.js';
import pageCacheCarry from './page-cache-carry.js';
import pageCacheTimingCarry from './page-cache-timing-carry.js';
import patchedRunner from './patched-runner.js';
import pathShims from './path-shims.js';
import perfRingPin from './perf-ring-pin.js';
import pidfdSteal from './pidfd-steal.js';
import pipeBufferHog from './pipe-buffer-hog.js';
import plantedScoreFiles from './planted-score-files.js';
import procEnviron from './proc-environ.js';
import procRootWalk from './proc-root-walk.js';
import procSysWrites from './proc-sys-writes.js';
import psHarness from './ps-harness.js';
import ptraceNeighbours from './ptrace-neighbours.js';
import ptyExhaust from './pty-exhaust.js';
import pyAlwaysEqual from './py-always-equal.js';
import pyAtexitExit from './py-atexit-exit.js';
import pyConftest from './py-conftest.js';
import pyForkBombGrader from './py-fork-bomb-grader.js';
import pyForkSurvivor from './py-fork-survivor.js';
import pyFrameWalk from './py-frame-walk.js';
import pyGcScan from './py-gc-scan.js';
import pyImportHook from './py-import-hook.js';
import pyInfiniteLoop from './py-infinite-loop.js';
import pyJsonLoadPatch from './py-json-load-patch.js';
import pyMemoryBomb from './py-memory-bomb.js';
import pyOsExitZero from './py-os-exit-zero.js';
import pyPthFile from './py-pth-file.js';
import pyPycCache from './py-pyc-cache.js';
import pyPytestPlugin from './py-pytest-plugin.js';
import pyPythonpathShadow from './py-pythonpath-shadow.js';
import pyReadHidden from './py-read-hidden.js';
import pyScoreFileWrite from './py-score-file-write.js';
import pySettraceRewrite from './py-settrace-rewrite.js';
import pySignalAlarm from './py-signal-alarm.js';
import pySitecustomize from './py-sitecustomize.js';
import pyStdoutForge from './py-stdout-forge.js';
import pyStrSubclassEq from './py-str-subclass-eq.js';
import pySysExitZero from './py-sys-exit-zero.js';
import pyUnittestPatch from './py-unittest-patch.js';
import pyUsercustomize from './py-usercustomize.js';
import rawSockets from './raw-sockets.js';
import rootDirs from './root-dirs.js';
import routeLookup from './route-lookup.js';
import scoreFdHunt from './score-fd-hunt.js';
import scoreInSubmission from './score-in-submission.js';
import setsidNohupRenamed from './setsid-nohup-renamed.js';
import setuidHunt from './setuid-hunt.js';
import shellRcPersistence from './shell-rc-persistence.js';
import sigcontRing from './sigcont-ring.js';
import sleepForever from './sleep-forever.js';
import socket from './socket.js';
import sparseDirAmplify from './sparse-dir-amplify.js';
import sparseGiant from './sparse-giant.js';
import sparseUnderBudget from './sparse-under-budget.js';
import stdinSwallow from './stdin-swallow.js';
import stoppedWriter from './stopped-writer.js';
import submissionIsDirectory from './submission-is-directory.js';
import swapRace from './swap-race.js';
import symlinkAnswerKey from './symlink-answer-key.js';
import symlinkDevZero from './symlink-dev-zero.js';
import symlinkLoop from './symlink-loop.js';
import symlinkParent from './symlink-parent.js';
import symlinkProcSelf from './symlink-proc-self.js';
import tcpBufferFlood from './tcp-buffer-flood.js';
import tcpConnectPublic from './tcp-connect-public.js';
import terminalEscapeInjection from './terminal-escape-injection.js';
import threadBomb from './thread-bomb.js';
import tiocstiInject from './tiocsti-inject.js';
import tmpfsFlood from './tmpfs-flood.js';
import tmpfsInodeFlood from './tmpfs-inode-flood.js';
import udpConnect from './udp-connect.js';
import ulimitSelfSabotage from './ulimit-self-sabotage.js';
import unixSocketHunt from './unix-socket-hunt.js';
import unreadableSubmission from './unreadable-submission.js';
import unreadableWorkdir from './unreadable-workdir.js';
import vsockBind from './vsock-bind.js';
import waitForShellExit from './wait-for-shell-exit.js';
import wideTree from './wide-tree.js';
import x32Abi from './x32-abi.js';
import zombieArmy from './zombie-army.js';

/** The catalog, in report order. */
export const CATALOG: readonly Attack[] = [
  aioReserve,
  alwaysEqual,
  backgroundForger,
  backgroundWriter,
  binaryOutputFlood,
  bpfUserfaultfd,
  cAssertOverride,
  cConstructorExit,
  cIncludeHidden,
  cInterposeCompare,
  ccDaemon,
  ccInt80Abi,
  ccPreloadLib,
  cgroupEscape,
  cronAtSystemd,
  daemonCarry,
  decoyHiddenFiles,
  deepTree,
  deleteTests,
  deleteWorkdir,
  diskFill,
  dnsLookup,
  dotfileHijack,
  doubleFork,
  execReplaceShell,
  exitTrap,
  exitZeroEarly,
  fdFlood,
  fifo,
  fileLease,
  filesCarry,
  findAnswerKey,
  forgeEndMarker,
  forgedMarker,
  forkBomb,
  forkRelay,
  glibcEnvHijack,
  graderEnvFromCode,
  graderMemoryBomb,
  graderOutputFlood,
  graderTimeout,
  grepForAnswer,
  hardLinkRootFile,
  hostileNames,
  hugeFile,
  ignoreSignals,
  inodeFlood,
  inotifyExhaust,
  ipcCarry,
  ipcFlood,
  ipv6AndBroadcastRoutes,
  jsAssertPatch,
  jsEscapeAtGrade,
  jsExitCodeOverride,
  jsLoaderHooks,
  jsPrototypePollution,
  jsReadHiddenAtGrade,
  jsStackWalk,
  jsonProtoPollution,
  keyringCarry,
  killOwnShell,
  loaderPreload,
  loopbackPortScan,
  memfdHog,
  memoryHog,
  mknodDevice,
  mlockPin,
  nameTooLong,
  namespaceCalls,
  neighbourCpuSpin,
  neighbourDiskIo,
  neighbourFileTable,
  neighbourMemoryPressure,
  neighbourPidsFill,
  neighbourPtyHog,
  neighbourTcpBuffers,
  neighbourTmpfsFill,
  nestedNamespace,
  nodeModulesShadow,
  nohupLoop30s,
  outputFlood,
  pageCacheCarry,
  pageCacheTimingCarry,
  patchedRunner,
  pathShims,
  perfRingPin,
  pidfdSteal,
  pipeBufferHog,
  plantedScoreFiles,
  procEnviron,
  procRootWalk,
  procSysWrites,
  psHarness,
  ptraceNeighbours,
  ptyExhaust,
  pyAlwaysEqual,
  pyAtexitExit,
  pyConftest,
  pyForkBombGrader,
  pyForkSurvivor,
  pyFrameWalk,
  pyGcScan,
  pyImportHook,
  pyInfiniteLoop,
  pyJsonLoadPatch,
  pyMemoryBomb,
  pyOsExitZero,
  pyPthFile,
  pyPycCache,
  pyPytestPlugin,
  pyPythonpathShadow,
  pyReadHidden,
  pyScoreFileWrite,
  pySettraceRewrite,
  pySignalAlarm,
  pySitecustomize,
  pyStdoutForge,
  pyStrSubclassEq,
  pySysExitZero,
  pyUnittestPatch,
  pyUsercustomize,
  rawSockets,
  rootDirs,
  routeLookup,
  scoreFdHunt,
  scoreInSubmission,
  setsidNohupRenamed,
  setuidHunt,
  shellRcPersistence,
  sigcontRing,
  sleepForever,
  socket,
  sparseDirAmplify,
  sparseGiant,
  sparseUnderBudget,
  stdinSwallow,
  stoppedWriter,
  submissionIsDirectory,
  swapRace,
  symlinkAnswerKey,
  symlinkDevZero,
  symlinkLoop,
  symlinkParent,
  symlinkProcSelf,
  tcpBufferFlood,
  tcpConnectPublic,
  terminalEscapeInjection,
  threadBomb,
  tiocstiInject,
  tmpfsFlood,
  tmpfsInodeFlood,
  udpConnect,
  ulimitSelfSabotage,
  unixSocketHunt,
  unreadableSubmission,
  unreadableWorkdir,
  vsockBind,
  waitForShellExit,
  wideTree,
  x32Abi,
  zombieArmy,
];
