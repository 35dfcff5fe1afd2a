# The spawner (see ../spawner.ts): a small process that starts programs for the harness, so the
# harness never forks itself. A fork copies the forking process's page tables, and the harness
# (Node.js, often hundreds of MiB) does it on its event loop; this process holds a few MiB.
#
# It reads frames on stdin and writes frames on stdout, each a 32-bit big-endian length, then
# that many bytes: a type letter and its fields (N: 32-bit big-endian; s: N length + bytes).
#   in   R id flags max cwd:s file:s argc:N argv:s... envc:N env:s...   run a program
#        K id signal                                                    signal it (its group)
#        F id                                                           forget it (no result)
#   out  S id pid                          started (its exec succeeded)
#        E id errno message:s              could not start (fork, pipe, chdir or exec failed)
#        O id                              stdout or stderr went past max bytes (once)
#        D id status outBytes errBytes out:s err:s   ended: reaped, and both outputs closed
# A program gets stdin /dev/null, its stdout and stderr pipes and no other descriptor, the
# given environment alone, default signal dispositions and an empty signal mask.
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

sub start {
  my ($id, $flags, $max, $cwd, $file, $argv, $env) = @_;
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
  if ($type eq 'R') {
    my ($id, $flags, $max) = unpack('NNN', substr($body, 1, 12));
    my $at = 13;
    my $take = sub {
      my $length = unpack('N', substr($body, $at, 4));
      my $value = substr($body, $at + 4, $length);
      $at += 4 + $length;
      return $value;
    };
    my $cwd = $take->();
    my $file = $take->();
    my $argc = unpack('N', substr($body, $at, 4));
    $at += 4;
    my @argv = map { $take->() } 1 .. $argc;
    my $envc = unpack('N', substr($body, $at, 4));
    $at += 4;
    my @env = map { $take->() } 1 .. $envc;
    start($id, $flags, $max, $cwd, $file, \@argv, \@env);
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
