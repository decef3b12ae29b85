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
 * On any failure before the exec (a kernel without Landlock ABI 6 or user notification)
 * it still execs the command, silently: the broker then relays as it does without the
 * launcher.  It holds no privilege the command does not have: everything it does, the
 * command could do itself.  COMMAND is looked up as bubblewrap's execvp(3) would (PATH,
 * else "/bin:/usr/bin"; a file without a known format is run by /bin/sh), and when it
 * cannot be executed the launcher says so as bubblewrap would ("bwrap: execvp NAME:
 * REASON", status 1), so a missing command reads the same with and without it.
 *
 * Freestanding (no C library: a few kilobytes, which bubblewrap copies into the sandbox on
 * every run), for x86_64 and aarch64; built by stockade with
 *     cc -O2 -static -nostdlib -ffreestanding -fno-stack-protector -fno-pie -no-pie -s
 */
#include <asm/unistd.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>

#if !defined(__x86_64__) && !defined(__aarch64__)
#error "the connect launcher is for x86_64 and aarch64"
#endif

#ifndef SECCOMP_FILTER_FLAG_NEW_LISTENER
#define SECCOMP_FILTER_FLAG_NEW_LISTENER (1UL << 3)
#endif
#ifndef SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV
#define SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV (1UL << 5)
#endif
#ifndef SECCOMP_RET_USER_NOTIF
#define SECCOMP_RET_USER_NOTIF 0x7fc00000U
#endif
#define MSG_FASTOPEN_FLAG 0x20000000
#define MSG_NOSIGNAL_FLAG 0x4000
#define SIOCGSKNS_NUMBER 0x894C
#define PR_SET_NO_NEW_PRIVS_OPTION 38
#define SOL_SOCKET_LEVEL 1
#define SCM_RIGHTS_TYPE 1
/* landlock(7), Linux 5.13: the same numbers on x86_64 and aarch64 */
#define NR_LANDLOCK_CREATE_RULESET 444
#define NR_LANDLOCK_RESTRICT_SELF 446
#define LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0)
#define E_INTR 4
#define E_NOEXEC 8
#define E_ACCES 13
#define E_INVAL 22
#define E_NOENT 2

#if defined(__x86_64__)
#define FILTER_ARCH AUDIT_ARCH_X86_64
__asm__(".text\n.global _start\n_start:\n\txor %rbp, %rbp\n\tmov %rsp, %rdi\n\tand $-16, %rsp\n"
        "\tcall start_c\n\thlt\n");

static long sys6(long n, long a, long b, long c, long d, long e, long f)
{
    register long r10 __asm__("r10") = d;
    register long r8 __asm__("r8") = e;
    register long r9 __asm__("r9") = f;
    long ret;
    __asm__ volatile("syscall"
                     : "=a"(ret)
                     : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
                     : "rcx", "r11", "memory");
    return ret;
}
#else
#define FILTER_ARCH AUDIT_ARCH_AARCH64
__asm__(".text\n.global _start\n_start:\n\tmov x29, #0\n\tmov x30, #0\n\tmov x0, sp\n\tbl start_c\n");

static long sys6(long n, long a, long b, long c, long d, long e, long f)
{
    register long x8 __asm__("x8") = n;
    register long x0 __asm__("x0") = a;
    register long x1 __asm__("x1") = b;
    register long x2 __asm__("x2") = c;
    register long x3 __asm__("x3") = d;
    register long x4 __asm__("x4") = e;
    register long x5 __asm__("x5") = f;
    __asm__ volatile("svc #0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4), "r"(x5) : "memory");
    return x0;
}
#endif

#define sys3(n, a, b, c) sys6((n), (long)(a), (long)(b), (long)(c), 0, 0, 0)

/* (the compiler may call these for structure copies) */
void *memset(void *to, int value, size_t size)
{
    unsigned char *p = to;
    while (size--)
        *p++ = (unsigned char)value;
    return to;
}

void *memcpy(void *to, const void *from, size_t size)
{
    unsigned char *p = to;
    const unsigned char *q = from;
    while (size--)
        *p++ = *q++;
    return to;
}

static size_t length(const char *text)
{
    size_t n = 0;
    while (text[n])
        n++;
    return n;
}

static void say(const char *text)
{
    sys3(__NR_write, 2, text, length(text));
}

/* the first argument of a sock_filter program's instruction at offset k of seccomp_data */
#define ARG_LOW(i) (offsetof(struct seccomp_data, args) + 8 * (i))
#define LOAD(k) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, (k))
#define RET(k) BPF_STMT(BPF_RET | BPF_K, (k))
#define JEQ(k, t, f) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (k), (t), (f))
#define JA(k) BPF_STMT(BPF_JMP | BPF_JA, (k))

struct io_vector {
    void *base;
    size_t size;
};

struct message_header {
    void *name;
    int name_size;
    struct io_vector *io;
    size_t io_count;
    void *control;
    size_t control_size;
    unsigned int flags;
};

static void handoff(int channel)
{
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
        /* 18 */ RET(SECCOMP_RET_ERRNO | 1 /* EPERM */),
        /* 19 */ RET(SECCOMP_RET_ALLOW),
        /* 20 */ BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, MSG_FASTOPEN_FLAG, 0, 1),
        /* 21 */ RET(SECCOMP_RET_ERRNO | 95 /* EOPNOTSUPP */),
        /* 22 */ RET(SECCOMP_RET_ALLOW),
    };
    struct sock_fprog program = {sizeof(code) / sizeof(code[0]), code};
    if (sys3(__NR_prctl, PR_SET_NO_NEW_PRIVS_OPTION, 1, 0) != 0)
        return;
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
    long domain = sys3(NR_LANDLOCK_CREATE_RULESET, &ruleset, sizeof(ruleset), 0);
    if (domain < 0)
        return;
    long restricted = sys3(NR_LANDLOCK_RESTRICT_SELF, domain, 0, 0);
    sys3(__NR_close, domain, 0, 0);
    if (restricted != 0)
        return;
    /* once the broker has read a connect, a signal does not interrupt it (Linux 5.19): a
     * restarted connect would find the socket connected already */
    long listener = sys3(__NR_seccomp, SECCOMP_SET_MODE_FILTER,
                         SECCOMP_FILTER_FLAG_NEW_LISTENER | SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV, &program);
    if (listener == -E_INVAL)
        listener = sys3(__NR_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &program);
    if (listener < 0)
        return;
    char tag = 'S';
    struct io_vector io = {&tag, 1};
    union {
        struct {
            size_t size;
            int level, type;
            int fd;
        } rights;
        unsigned char space[24]; /* CMSG_SPACE(sizeof(int)) */
    } control;
    memset(&control, 0, sizeof(control));
    control.rights.size = 20; /* CMSG_LEN(sizeof(int)) */
    control.rights.level = SOL_SOCKET_LEVEL;
    control.rights.type = SCM_RIGHTS_TYPE;
    control.rights.fd = (int)listener;
    struct message_header message = {0, 0, &io, 1, control.space, sizeof(control.space), 0};
    long sent;
    do
        sent = sys3(__NR_sendmsg, channel, &message, MSG_NOSIGNAL_FLAG);
    while (sent == -E_INTR);
    sys3(__NR_close, listener, 0, 0);
}

static const char *reason(long error)
{
    switch (error) {
    case 1: return "Operation not permitted";
    case E_NOENT: return "No such file or directory";
    case 5: return "Input/output error";
    case 7: return "Argument list too long";
    case E_NOEXEC: return "Exec format error";
    case 12: return "Cannot allocate memory";
    case E_ACCES: return "Permission denied";
    case 14: return "Bad address";
    case 20: return "Not a directory";
    case 21: return "Is a directory";
    case E_INVAL: return "Invalid argument";
    case 23: return "Too many open files in system";
    case 24: return "Too many open files";
    case 26: return "Text file busy";
    case 36: return "File name too long";
    case 40: return "Too many levels of symbolic links";
    case 80: return "Accessing a corrupted shared library";
    default: return "Unknown error";
    }
}

static const char *variable(char **environment, const char *name)
{
    size_t size = length(name);
    for (char **each = environment; *each; each++) {
        size_t i = 0;
        while (i < size && (*each)[i] == name[i])
            i++;
        if (i == size && (*each)[size] == '=')
            return *each + size + 1;
    }
    return 0;
}

/* execve, and for a file of no known format, /bin/sh FILE ARGS (as glibc's execvp) */
static long run(const char *path, char **argv, char **environment)
{
    long error = sys3(__NR_execve, path, argv, environment);
    if (error != -E_NOEXEC)
        return error;
    size_t count = 0;
    while (argv[count])
        count++;
    if (count > 4096)
        return error;
    char *shell[4098];
    shell[0] = "/bin/sh";
    shell[1] = (char *)path;
    for (size_t i = 1; i <= count; i++)
        shell[i + 1] = argv[i];
    sys3(__NR_execve, "/bin/sh", shell, environment);
    return error;
}

/* execvp(3) as glibc does it: a name with a slash as it is, else each PATH entry in turn */
static long search(const char *file, char **argv, char **environment)
{
    if (!*file)
        return -E_NOENT;
    for (const char *p = file; *p; p++)
        if (*p == '/')
            return run(file, argv, environment);
    const char *path = variable(environment, "PATH");
    if (!path)
        path = "/bin:/usr/bin";
    size_t size = length(file);
    int denied = 0;
    long error = -E_NOENT;
    char buffer[4096 + 256];
    for (const char *start = path;; start++) {
        const char *end = start;
        while (*end && *end != ':')
            end++;
        size_t directory = (size_t)(end - start);
        if (directory + size + 2 <= sizeof(buffer)) {
            size_t at = 0;
            for (size_t i = 0; i < directory; i++)
                buffer[at++] = start[i];
            if (directory)
                buffer[at++] = '/';
            for (size_t i = 0; i <= size; i++)
                buffer[at++] = file[i];
            error = run(buffer, argv, environment);
            switch (-error) {
            case E_ACCES:
                denied = 1;
                /* fall through */
            case E_NOENT:
            case 116: /* ESTALE */
            case 20:  /* ENOTDIR */
            case 19:  /* ENODEV */
            case 110: /* ETIMEDOUT */
                break;
            default:
                return error;
            }
        }
        if (!*end)
            break;
        start = end;
    }
    return denied ? -E_ACCES : error;
}

__attribute__((used)) void start_c(long *stack)
{
    int argc = (int)stack[0];
    char **argv = (char **)(stack + 1);
    char **environment = argv + argc + 1;
    if (argc < 3) {
        say("usage: connect-launch FD COMMAND [ARG...]\n");
        sys3(__NR_exit_group, 127, 0, 0);
    }
    long channel = 0;
    const char *p = argv[1];
    while (*p >= '0' && *p <= '9' && channel < 65536)
        channel = channel * 10 + (*p++ - '0');
    if (!*p && p != argv[1] && channel > 2 && channel < 65536) {
        handoff((int)channel);
        sys3(__NR_close, channel, 0, 0);
    }
    long error = search(argv[2], argv + 2, environment);
    say("bwrap: execvp ");
    say(argv[2]);
    say(": ");
    say(reason(-error));
    say("\n");
    sys3(__NR_exit_group, 1, 0, 0);
}
