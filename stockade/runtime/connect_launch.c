/* The connect launcher of stockade's network broker (stockade/runtime/handoff.py).
 *
 * Run by bubblewrap inside the sandbox, in place of the command, as
 *     connect-launch FD COMMAND [ARG...]
 * It enters a Landlock domain of its own (see handoff() for why), then installs a seccomp
 * filter on itself that
 *   - sends every connect(2) to a user-space listener (SECCOMP_RET_USER_NOTIF),
 *   - refuses sendto/sendmsg/sendmmsg with MSG_FASTOPEN in their flags (EOPNOTSUPP),
 *   - refuses ioctl(SIOCGSKNS) (EPERM),
 * sends the filter's listener over the socket FD (SCM_RIGHTS, the host's end of the pair
 * is the broker's), closes both and execs COMMAND with its arguments and the environment
 * as given (argv[0] is COMMAND's: the command sees what it saw without the launcher).
 *
 * On any failure before the exec (an architecture it has no filter for, a kernel without
 * user notification) it still execs the command, silently: the broker then relays as it
 * does without the launcher.  It holds no privilege the command does not have: everything
 * it does, the command could do itself.  When COMMAND cannot be executed it says so as
 * bubblewrap would ("bwrap: execvp NAME: REASON", status 1), so a missing command reads
 * the same with and without it.
 *
 * Built by stockade with `cc -O2 -static` (or without -static) from this file alone.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SECCOMP_FILTER_FLAG_NEW_LISTENER
#define SECCOMP_FILTER_FLAG_NEW_LISTENER (1UL << 3)
#endif
#ifndef SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV
#define SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV (1UL << 5)
#endif
#ifndef SECCOMP_RET_USER_NOTIF
#define SECCOMP_RET_USER_NOTIF 0x7fc00000U
#endif
#ifndef MSG_FASTOPEN
#define MSG_FASTOPEN 0x20000000
#endif
#define SIOCGSKNS_NUMBER 0x894C
/* landlock(7), Linux 5.13: the same numbers on x86_64 and aarch64 */
#define NR_LANDLOCK_CREATE_RULESET 444
#define NR_LANDLOCK_RESTRICT_SELF 446
#define LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0)

#if defined(__x86_64__)
#define FILTER_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define FILTER_ARCH AUDIT_ARCH_AARCH64
#endif

/* the low 32 bits of argument i (little-endian: both architectures above) */
#define ARG_LOW(i) (offsetof(struct seccomp_data, args) + 8 * (i))
#define LOAD(k) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, (k))
#define RET(k) BPF_STMT(BPF_RET | BPF_K, (k))
#define JEQ(k, t, f) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (k), (t), (f))
#define JA(k) BPF_STMT(BPF_JMP | BPF_JA, (k))

static int handoff(int channel)
{
#ifndef FILTER_ARCH
    (void)channel;
    return -1;
#else
    struct sock_filter code[] = {
        /* 0 */ LOAD(offsetof(struct seccomp_data, arch)),
        /* 1 */ JEQ(FILTER_ARCH, 1, 0),
        /* 2 */ RET(SECCOMP_RET_ALLOW), /* (bubblewrap's filter kills other architectures) */
        /* 3 */ LOAD(offsetof(struct seccomp_data, nr)),
        /* 4 */ JEQ(__NR_connect, 0, 1),
        /* 5 */ RET(SECCOMP_RET_USER_NOTIF),
        /* 6 */ JEQ(__NR_sendto, 0, 2),
        /* 7 */ LOAD(ARG_LOW(3)),
        /* 8 */ JA(11),
        /* 9 */ JEQ(__NR_sendmmsg, 0, 2),
        /* 10 */ LOAD(ARG_LOW(3)),
        /* 11 */ JA(8),
        /* 12 */ JEQ(__NR_sendmsg, 0, 2),
        /* 13 */ LOAD(ARG_LOW(2)),
        /* 14 */ JA(5),
        /* 15 */ JEQ(__NR_ioctl, 0, 3),
        /* 16 */ LOAD(ARG_LOW(1)),
        /* 17 */ JEQ(SIOCGSKNS_NUMBER, 0, 1),
        /* 18 */ RET(SECCOMP_RET_ERRNO | EPERM),
        /* 19 */ RET(SECCOMP_RET_ALLOW),
        /* 20 */ BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, MSG_FASTOPEN, 0, 1),
        /* 21 */ RET(SECCOMP_RET_ERRNO | EOPNOTSUPP),
        /* 22 */ RET(SECCOMP_RET_ALLOW),
    };
    struct sock_fprog program = {sizeof(code) / sizeof(code[0]), code};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
        return -1;
    /* A Landlock domain of its own first, for its ptrace scoping: the command and its
     * descendants cannot ptrace, or read or write the memory of, a process outside the
     * domain - bubblewrap's init, pid 1 of the sandbox, which lacks this filter and could
     * otherwise be made to disconnect a handed socket.  The domain handles no file or
     * network access (a file ruleset would refuse renames across directories); its one
     * scope, abstract unix sockets, is refused in the sandbox anyway.  Needs Landlock ABI 6
     * (Linux 6.12).  No domain: no listener. */
    struct {
        unsigned long long handled_access_fs, handled_access_net, scoped;
    } ruleset = {0, 0, LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET};
    int domain = (int)syscall(NR_LANDLOCK_CREATE_RULESET, &ruleset, sizeof(ruleset), 0);
    if (domain < 0)
        return -1;
    long restricted = syscall(NR_LANDLOCK_RESTRICT_SELF, domain, 0);
    close(domain);
    if (restricted != 0)
        return -1;
    /* once the broker has read a connect, a signal does not interrupt it (Linux 5.19): a
     * restarted connect would find the socket connected already */
    int listener = (int)syscall(__NR_seccomp, SECCOMP_SET_MODE_FILTER,
                                SECCOMP_FILTER_FLAG_NEW_LISTENER | SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV, &program);
    if (listener < 0 && errno == EINVAL)
        listener = (int)syscall(__NR_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &program);
    if (listener < 0)
        return -1;
    char tag = 'S';
    struct iovec iov = {&tag, 1};
    union {
        struct cmsghdr header;
        char space[CMSG_SPACE(sizeof(int))];
    } control;
    memset(&control, 0, sizeof(control));
    struct msghdr message = {0};
    message.msg_iov = &iov;
    message.msg_iovlen = 1;
    message.msg_control = control.space;
    message.msg_controllen = sizeof(control.space);
    struct cmsghdr *cmsg = CMSG_FIRSTHDR(&message);
    cmsg->cmsg_level = SOL_SOCKET;
    cmsg->cmsg_type = SCM_RIGHTS;
    cmsg->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(cmsg), &listener, sizeof(int));
    ssize_t sent;
    do
        sent = sendmsg(channel, &message, MSG_NOSIGNAL);
    while (sent < 0 && errno == EINTR);
    close(listener);
    return sent == 1 ? 0 : -1;
#endif
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fputs("usage: connect-launch FD COMMAND [ARG...]\n", stderr);
        return 127;
    }
    char *end = NULL;
    long channel = strtol(argv[1], &end, 10);
    if (end != argv[1] && *end == '\0' && channel > 2 && channel < 65536) {
        handoff((int)channel);
        close((int)channel);
    }
    execvp(argv[2], argv + 2);
    fprintf(stderr, "bwrap: execvp %s: %s\n", argv[2], strerror(errno));
    return 1;
}
