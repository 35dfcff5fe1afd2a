# The spawner (see ../spawner.ts): a small process that starts programs for the harness, so the
# harness never forks itself. A fork copies the forking process's page tables, and the harness
# (Node.js, often hundreds of MiB) does it on its event loop; this process holds a few MiB.
#
# It reads frames on stdin and writes frames on stdout, each a 32-bit big-endian length, then
# that many bytes: a type letter and its fields (N: 32-bit big-endian; s: N length + bytes).
#   in   R id flags max cwd:s file:s argc:N argv:s... envc:N env:s...   run a program
#        P id flags max cwd:s source:s argc:N arg:s... envc:N env:s...   run a Perl program (perl -e)
#        U id max uid gid rounds                                        kill every process of a uid
#        K id signal                                                    signal it (its group)
#        F id                                                           forget it (no result)
#   out  S id pid                          started (its exec succeeded)
#        E id errno message:s              could not start (fork, pipe, chdir or exec failed)
#        O id                              stdout or stderr went past max bytes (once)
#        D id status outBytes errBytes out:s err:s   ended: reaped, and both outputs closed
# A program gets stdin /dev/null, its stdout and stderr pipes and no other descriptor, the
# given environment alone, default signal dispositions and an empty signal mask.
# P runs the source as `perl -e source args...` would, in the fork itself (no exec, no new
# interpreter): the same environment, descriptors and signals as R, no strict or warnings but
# the program's own, its own package; a die prints its message and exits as perl's does.
# U runs no program: the fork becomes uid and gid (no supplementary group, no capability, not
# dumpable: another process of the uid can neither ptrace it nor read its memory) and calls
# kill(-1, SIGKILL) rounds times (it stops at a call that fails); it prints the number of calls
# that succeeded and a newline; a failure to become the uid is exit 125 and a line on
# stderr. Its S frame comes before it drops root (a process of the uid can stop it after).
# flags: 1 = a session (and process group) of its own. At most max bytes of each output are
# kept; the rest is counted. At the end of stdin every program still running is killed (its
# group with flag 1), and this process exits once they are gone.
use strict;
use warnings;
use POSIX ();

$SIG{PIPE} = 'IGNORE';
# A child's exit interrupts select (EINTR); the loop reaps after every wake-up.
$SIG{CHLD} = sub { };
# This process shares the harness's process group: a Ctrl-C meant for the harness (which tears
# its episodes down itself) must not end it under the programs it runs. Reset in each child.
my @shielded = qw(INT TERM HUP QUIT);
$SIG{$_} = 'IGNORE' for @shielded;
binmode STDIN;
binmode STDOUT;

my %jobs;      # id => job
my %by_pid;    # pid => id
my %streams;   # fileno => [id, 'out' | 'err']
my $input = '';
my $input_closed = 0;

sub str { return pack('N', length $_[0]) . $_[0] }

sub capped { return $_[0] > 0xffffffff ? 0xffffffff : $_[0] }

sub send_frame {
  my ($body) = @_;
  my $frame = pack('N', length $body) . $body;
  while (length $frame) {
    my $wrote = syswrite(STDOUT, $frame);
    if (!defined $wrote) {
      next if $!{EINTR};
      # The harness is gone: nothing to report to, and nobody to run for.
      kill_job($_, 9) for values %jobs;
      exit 0;
    }
    substr($frame, 0, $wrote) = '';
  }
}

# Start a job: the fork runs $body (which execs, or exits) once its descriptors are set; $body
# reports a failure to start with $fail. The job counts as started when the status pipe closes
# without a report (close-on-exec, or $body closing it).
sub start {
  my ($id, $flags, $max, $cwd, $body) = @_;
  my ($out_r, $out_w, $err_r, $err_w, $status_r, $status_w);
  # Descriptors above 2 that Perl opens are close-on-exec: the program gets 0, 1 and 2 only.
  unless (pipe($out_r, $out_w) && pipe($err_r, $err_w) && pipe($status_r, $status_w)) {
    send_frame('E' . pack('NN', $id, $! + 0) . str("pipe: $!"));
    return;
  }
  my $pid = fork();
  if (!defined $pid) {
    my ($errno, $why) = ($! + 0, "$!");
    close $_ for ($out_r, $out_w, $err_r, $err_w, $status_r, $status_w);
    send_frame('E' . pack('NN', $id, $errno) . str("fork: $why"));
    return;
  }
  if ($pid == 0) {
    $SIG{$_} = 'DEFAULT' for 'PIPE', 'CHLD', @shielded;
    POSIX::sigprocmask(POSIX::SIG_SETMASK(), POSIX::SigSet->new());
    POSIX::setsid() if $flags & 1;
    my $null = POSIX::open('/dev/null', POSIX::O_RDONLY());
    my $fail = sub {
      syswrite($status_w, pack('N', $! + 0) . $_[0]);
      POSIX::_exit(127);
    };
    $fail->('open /dev/null') unless defined $null;
    POSIX::dup2($null, 0) // $fail->('dup2');
    POSIX::dup2(fileno($out_w), 1) // $fail->('dup2');
    POSIX::dup2(fileno($err_w), 2) // $fail->('dup2');
    close $_ for ($out_r, $out_w, $err_r, $err_w, $status_r);    # through Perl, which owns them
    # Every other descriptor goes, inherited ones too (close-on-exec or not): only 0, 1, 2.
    my $keep = fileno $status_w;
    if (opendir(my $fds, '/proc/self/fd')) {
      my @open = grep { /^\d+$/ && $_ > 2 && $_ != $keep } readdir $fds;
      closedir $fds;
      POSIX::close($_) for @open;
    } else {
      my $max = POSIX::sysconf(POSIX::_SC_OPEN_MAX()) // 1024;
      $max = 65536 if $max > 65536;
      $_ != $keep && POSIX::close($_) for 3 .. $max - 1;
    }
    chdir($cwd) or $fail->("chdir $cwd");
    $body->($fail, $status_w);
    POSIX::_exit(127);
  }
  close $out_w;
  close $err_w;
  close $status_w;
  # Blocks until the child's exec (close-on-exec closes the status pipe) or its failure.
  my $report = '';
  while (1) {
    my $got = sysread($status_r, $report, 4096, length $report);
    last if defined $got && $got == 0;
    next if !defined $got && $!{EINTR};
    last unless defined $got;
  }
  close $status_r;
  if (length($report) >= 4) {
    my $errno = unpack('N', $report);
    my $what = substr($report, 4);
    waitpid($pid, 0);
    close $out_r;
    close $err_r;
    local $! = $errno;
    send_frame('E' . pack('NN', $id, $errno) . str("$what: $!"));
    return;
  }
  my $job = {
    pid    => $pid,
    group  => $flags & 1,
    max    => $max,
    status => undef,
    over   => 0,
    out    => { fh => $out_r, data => '', bytes => 0 },
    err    => { fh => $err_r, data => '', bytes => 0 },
  };
  $jobs{$id} = $job;
  $by_pid{$pid} = $id;
  $streams{ fileno $out_r } = [$id, 'out'];
  $streams{ fileno $err_r } = [$id, 'err'];
  send_frame('S' . pack('NN', $id, $pid));
}

sub exec_body {
  my ($file, $argv, $env) = @_;
  return sub {
    my ($fail) = @_;
    %ENV = ();
    for my $pair (@$env) {
      my ($key, $value) = split /=/, $pair, 2;
      $ENV{$key} = $value;
    }
    {
      no warnings 'exec';    # the failure is reported below
      exec {$file} @$argv;
    }
    $fail->("exec $file");
  };
}

sub perl_body {
  my ($source, $args, $env) = @_;
  return sub {
    my ($fail, $status_w) = @_;
    %ENV = ();
    for my $pair (@$env) {
      my ($key, $value) = split /=/, $pair, 2;
      $ENV{$key} = $value;
    }
    close $status_w;    # started, as an exec would be
    @ARGV = @$args;
    ($!, $?) = (0, 0);
    my $ok = eval "package Karotte::Program; no strict; no warnings;\n#line 1 \"-e\"\n$source\n;1";
    if (!$ok) {
      # perl's own exit status after an uncaught die: errno, else $? >> 8, else 255.
      my $code = ($! + 0) || (($? >> 8) & 0xff) || 255;
      print STDERR $@;
      exit $code;
    }
    exit 0;
  };
}

# /proc/self/status's line for $field: its whitespace-separated values.
sub status_field {
  my ($field) = @_;
  open(my $fh, '<', '/proc/self/status') or return;
  while (my $line = <$fh>) {
    return split(' ', $1 // '') if $line =~ /^\Q$field\E:[ \t]*(.*)$/;
  }
  return;
}

sub kill_uid_body {
  my ($uid, $gid, $rounds) = @_;
  return sub {
    my ($fail, $status_w) = @_;
    # Started while still root: once it is the uid, a process of the uid can stop it, and this
    # process must never wait on it then. A failure from here on is exit 125 and stderr.
    close $status_w;
    my $refuse = sub {
      my $line = "karotte-kill-uid: $_[0]: $!\n";
      POSIX::write(2, $line, length $line);
      POSIX::_exit(125);
    };
    if ($uid == 0 || $gid == 0) {
      $! = POSIX::EINVAL();
      $refuse->('refusing uid or gid 0');
    }
    # setgroups(0, NULL): syscall 116 on x86-64; then gid and uid, real, effective and saved
    # (as root, setgid and setuid set all three), the uid last. Leaving root clears every
    # capability; prctl(PR_SET_DUMPABLE, 0): syscall 157, option 4.
    syscall(116, 0, 0) == 0 or $refuse->('setgroups');
    POSIX::setgid($gid) or $refuse->("setgid $gid");
    POSIX::setuid($uid) or $refuse->("setuid $uid");
    syscall(157, 4, 0, 0, 0, 0) == 0 or $refuse->('prctl PR_SET_DUMPABLE');
    my @uids = status_field('Uid');
    my @gids = status_field('Gid');
    my @groups = status_field('Groups');
    my @caps = map { status_field($_) } qw(CapPrm CapEff CapAmb);
    my $dropped = @uids == 4 && !grep({ $_ != $uid } @uids);
    $dropped &&= @gids == 4 && !grep({ $_ != $gid } @gids);
    $dropped &&= !@groups && @caps == 3 && !grep({ !/^0+$/ } @caps);
    if (!$dropped) {
      $! = POSIX::EPERM();
      $refuse->('credentials not dropped');
    }
    my $done = 0;
    $done += 1 while $done < $rounds && kill(9, -1);
    my $line = "$done\n";
    POSIX::write(1, $line, length $line);
    POSIX::_exit(0);
  };
}

sub kill_job {
  my ($job, $signal) = @_;
  # An unreaped child keeps its pid (and group id): the signal cannot reach another process.
  # A reaped leader's group is signalled only while a member of it holds the id.
  return if defined $job->{status} && !$job->{group};
  kill($signal, $job->{group} ? -$job->{pid} : $job->{pid});
}

sub close_stream {
  my ($stream) = @_;
  return unless defined $stream->{fh};
  delete $streams{ fileno $stream->{fh} };
  close $stream->{fh};
  $stream->{fh} = undef;
}

sub forget {
  my ($id) = @_;
  my $job = delete $jobs{$id} or return;
  # Still reaped later (its pid stays in by_pid until then); its result goes nowhere.
  close_stream($job->{$_}) for qw(out err);
}

sub handle_frame {
  my ($body) = @_;
  my $type = substr($body, 0, 1);
  if ($type eq 'R' || $type eq 'P') {
    my $at = 1;
    my $number = sub { my $value = unpack('N', substr($body, $at, 4)); $at += 4; return $value };
    my $string = sub {
      my $length = $number->();
      my $value = substr($body, $at, $length);
      $at += $length;
      return $value;
    };
    my ($id, $flags, $max) = map { $number->() } 1 .. 3;
    my $cwd = $string->();
    my $what = $string->();    # R: the file to exec; P: the Perl source
    my @argv = map { $string->() } 1 .. $number->();
    my @env = map { $string->() } 1 .. $number->();
    my $run = $type eq 'R' ? exec_body($what, \@argv, \@env) : perl_body($what, \@argv, \@env);
    start($id, $flags, $max, $cwd, $run);
  } elsif ($type eq 'U') {
    my ($id, $max, $uid, $gid, $rounds) = unpack('NNNNN', substr($body, 1, 20));
    start($id, 0, $max, '/', kill_uid_body($uid, $gid, $rounds));
  } elsif ($type eq 'K') {
    my ($id, $signal) = unpack('NN', substr($body, 1, 8));
    kill_job($jobs{$id}, $signal) if $jobs{$id};
  } elsif ($type eq 'F') {
    forget(unpack('N', substr($body, 1, 4)));
  }
}

sub reap {
  while ((my $pid = waitpid(-1, POSIX::WNOHANG())) > 0) {
    my $id = delete $by_pid{$pid};
    next unless defined $id && $jobs{$id} && $jobs{$id}{pid} == $pid;
    $jobs{$id}{status} = $?;
  }
}

sub finish_done {
  for my $id (keys %jobs) {
    my $job = $jobs{$id};
    next unless defined $job->{status} && !defined $job->{out}{fh} && !defined $job->{err}{fh};
    delete $jobs{$id};
    send_frame('D'
        . pack('NNNN', $id, $job->{status}, capped($job->{out}{bytes}), capped($job->{err}{bytes}))
        . str($job->{out}{data})
        . str($job->{err}{data}));
  }
}

my $pause = 0.001;
while (1) {
  reap();
  finish_done();
  last if $input_closed && !%jobs && !%by_pid;
  my $read = '';
  vec($read, fileno(STDIN), 1) = 1 unless $input_closed;
  vec($read, $_, 1) = 1 for keys %streams;
  # A program that closed its outputs but still runs (or whose exit is a moment behind its
  # last close) is waited for with a growing pause; its exit usually wakes select first.
  my $waiting = grep { !defined $_->{status} && !defined $_->{out}{fh} && !defined $_->{err}{fh} }
    values %jobs;
  $waiting ||= grep { !$jobs{ $by_pid{$_} } } keys %by_pid;
  my $ready = select(my $out = $read, undef, undef, $waiting ? $pause : undef);
  if ($ready < 0) {
    next if $!{EINTR};
    die "select: $!\n";
  }
  if ($ready == 0) {
    $pause = $pause * 2 > 0.05 ? 0.05 : $pause * 2;
    next;
  }
  $pause = 0.001;
  # The programs' outputs first: a frame read below may close a descriptor (forget) and a new
  # run may get its number, which select did not see ready (a read of it could block).
  for my $fd (keys %streams) {
    next unless vec($out, $fd, 1);
    my $entry = $streams{$fd} or next;
    my ($id, $which) = @$entry;
    my $job = $jobs{$id};
    my $stream = $job->{$which};
    my $got = sysread($stream->{fh}, my $chunk, 65536);
    next if !defined $got && $!{EINTR};
    if (!$got) {
      close_stream($stream);
      next;
    }
    $stream->{bytes} += $got;
    my $room = $job->{max} - length $stream->{data};
    $stream->{data} .= $room >= $got ? $chunk : substr($chunk, 0, $room) if $room > 0;
    if ($stream->{bytes} > $job->{max} && !$job->{over}) {
      $job->{over} = 1;
      send_frame('O' . pack('N', $id));
    }
  }
  if (!$input_closed && vec($out, fileno(STDIN), 1)) {
    my $got = sysread(STDIN, $input, 65536, length $input);
    if ((defined $got && $got == 0) || (!defined $got && !$!{EINTR})) {
      # The harness is gone: what it started is killed, and only the direct children are
      # waited for (a descendant outside a group could hold an output open for ever).
      $input_closed = 1;
      $input = '';
      for my $id (keys %jobs) {
        kill_job($jobs{$id}, 9);
        forget($id);
      }
    }
    while (length($input) >= 4) {
      my $length = unpack('N', $input);
      last if length($input) < 4 + $length;
      my $body = substr($input, 4, $length);
      substr($input, 0, 4 + $length) = '';
      handle_frame($body);
    }
  }
}
exit 0;
