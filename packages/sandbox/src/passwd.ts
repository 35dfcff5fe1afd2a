// The student's own /etc/passwd and /etc/group: root, nobody and the student, nothing of the host's.

export function passwdFiles(
  userName: string,
  uid: number,
  home: string,
  shell: string,
): { passwd: string; group: string } {
  return {
    passwd: [
      'root:x:0:0:root:/root:/usr/sbin/nologin',
      'nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin',
      `${userName}:x:${uid}:${uid}:karotte student:${home}:${shell}`,
      '',
    ].join('\n'),
    group: ['root:x:0:', 'nogroup:x:65534:', `${userName}:x:${uid}:`, ''].join('\n'),
  };
}
