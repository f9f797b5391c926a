/* The native thin client: `zktensor prove` through a running prover service without
 * starting Python.
 *
 * Through the service, a small proof's time is mostly the client's: Python's start-up
 * and the Python client's imports cost more than the service's proof at 2^12 (the
 * figures are in the commit that added this file). This program is that client for the
 * plain command line, and it hands every other one, unchanged, to the Python command
 * (ZKT_FALLBACK, a copy of pip's console script, by execv):
 *
 *   zktensor prove KEY.zkey W.wtns PROOF.json PUBLIC.json
 *                  [--r1cs R] [--no-check] [--no-verify] [--verify] [--workers N] [--serve]
 *
 * It sends one "prove_files" request (serve/protocol.py) with the paths as typed and its
 * working directory. The service checks the outputs before any work, proves, and writes
 * proof.json and public.json as one set (groth16/outputs.py: both or neither, a service
 * killed mid-request leaves no partial file), so this program parses no proof and writes
 * no file. Its error messages name the paths as typed, as the Python client's do.
 *
 * Handed to the Python command: other commands and options, `--opt=` forms it does not
 * know, no service (the Python command proves in-process, or starts one for --serve), a
 * TCP service ($ZKTENSOR_SERVE_ADDR), a path that is not UTF-8, a service that refuses the
 * request as unknown (an older one). A service that goes away mid-request: the Python
 * command proves in-process (--no-serve), after the note the Python client prints.
 *
 * Built and installed by `python -m zktensor.serve.native install` (scripts/setup_env.sh);
 * C99 and POSIX only.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#ifndef ZKT_FALLBACK
#error "build with -DZKT_FALLBACK='\"/path/to/zktensor-py\"' (python -m zktensor.serve.native install)"
#endif

#define MAX_REPLY (1u << 20)    /* a prove_files reply is a few fields */
#define MAX_DEPTH 8             /* as serve/wire.py */
#define MAX_WORKERS 256         /* as serve/protocol.py */

static int g_argc;
static char **g_argv;

/* -- handing over to the Python command ---------------------------------------------- */

static void python_command(char **argv) {
    argv[0] = (char *)ZKT_FALLBACK;
    execv(ZKT_FALLBACK, argv);
    fprintf(stderr, "zktensor: cannot run %s: %s\n", ZKT_FALLBACK, strerror(errno));
    exit(1);
}

/* The same command line, to the Python command. */
static void hand_over(void) { python_command(g_argv); }

/* The service went away mid-request: prove in-process, as the Python client does then. */
static void prove_in_process(void) {
    char **argv = calloc((size_t)g_argc + 2, sizeof *argv);
    int n = 0;
    if (!argv) hand_over();
    for (int i = 0; i < g_argc; i++)
        if (strcmp(g_argv[i], "--serve") != 0) argv[n++] = g_argv[i];   /* --serve excludes --no-serve */
    argv[n++] = "--no-serve";
    argv[n] = NULL;
    fprintf(stderr, "zktensor: the prover service went away mid-request; proving in-process\n");
    python_command(argv);
}

/* -- a growable byte buffer ------------------------------------------------------------- */

typedef struct { char *p; size_t n, cap; } buf;

static void put(buf *b, const char *s, size_t n) {
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 1024;
        while (b->n + n + 1 > cap) cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) hand_over();
        b->p = p, b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
}

static void puts_(buf *b, const char *s) { put(b, s, strlen(s)); }

/* Well-formed UTF-8 (no overlong forms, surrogates or code points past U+10FFFF):
 * what Python's strict decoder accepts. */
static int utf8_ok(const unsigned char *s) {
    while (*s) {
        unsigned c = *s, n, cp;
        if (c < 0x80) { s++; continue; }
        if (c >= 0xc2 && c <= 0xdf) n = 1, cp = c & 0x1f;
        else if (c >= 0xe0 && c <= 0xef) n = 2, cp = c & 0x0f;
        else if (c >= 0xf0 && c <= 0xf4) n = 3, cp = c & 0x07;
        else return 0;
        for (unsigned i = 1; i <= n; i++) {
            if ((s[i] & 0xc0) != 0x80) return 0;
            cp = cp << 6 | (s[i] & 0x3f);
        }
        if ((n == 2 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) || (n == 3 && (cp < 0x10000 || cp > 0x10ffff)))
            return 0;
        s += n + 1;
    }
    return 1;
}

/* "key": , after a comma unless it is the object's first */
static void put_key(buf *b, const char *key) {
    puts_(b, b->n > 1 ? ", \"" : "\"");
    puts_(b, key);
    puts_(b, "\": ");
}

/* "key": "value", with JSON's escapes; a value that is not UTF-8 goes to the Python command. */
static void put_string_field(buf *b, const char *key, const char *value) {
    if (!utf8_ok((const unsigned char *)value)) hand_over();
    char esc[8];
    put_key(b, key);
    puts_(b, "\"");
    for (const unsigned char *s = (const unsigned char *)value; *s; s++) {
        if (*s == '"' || *s == '\\') {
            esc[0] = '\\', esc[1] = (char)*s;
            put(b, esc, 2);
        } else if (*s < 0x20) {
            snprintf(esc, sizeof esc, "\\u%04x", *s);
            puts_(b, esc);
        } else {
            put(b, (const char *)s, 1);
        }
    }
    puts_(b, "\"");
}

static void put_raw_field(buf *b, const char *key, const char *json) {
    put_key(b, key);
    puts_(b, json);
}

/* -- the command line --------------------------------------------------------------------- */

typedef struct {
    const char *paths[4];       /* zkey, witness, proof, public */
    const char *r1cs;
    int no_check, no_verify, workers;
} prove_args;

/* An option's value: after "=", or the next argument (which must not start with "-", as
 * argparse has it). Anything else goes to the Python command, which says what is wrong. */
static const char *value_of(const char *eq, int *i) {
    if (eq) {
        if (!eq[1]) hand_over();
        return eq + 1;
    }
    if (*i + 1 >= g_argc || g_argv[*i + 1][0] == '-' || !g_argv[*i + 1][0]) hand_over();
    return g_argv[++*i];
}

static prove_args parse(void) {
    prove_args a = {{0}, NULL, 0, 0, 0};
    int npos = 0;
    for (int i = 2; i < g_argc; i++) {
        const char *arg = g_argv[i], *eq = strchr(arg, '=');
        size_t name_len = eq ? (size_t)(eq - arg) : strlen(arg);
        if (arg[0] != '-') {
            if (npos == 4 || !arg[0]) hand_over();
            a.paths[npos++] = arg;
        } else if (name_len == 6 && !strncmp(arg, "--r1cs", 6)) {
            a.r1cs = value_of(eq, &i);
        } else if (name_len == 9 && !strncmp(arg, "--workers", 9)) {
            const char *v = value_of(eq, &i);
            long n = 0;
            for (const char *c = v; *c; c++) {
                if (*c < '0' || *c > '9' || n > MAX_WORKERS) hand_over();  /* the Python command's error */
                n = n * 10 + (*c - '0');
            }
            if (n < 1 || n > MAX_WORKERS) hand_over();
            a.workers = (int)n;
        } else if (eq) {
            hand_over();
        } else if (!strcmp(arg, "--no-check")) {
            a.no_check = 1;
        } else if (!strcmp(arg, "--no-verify")) {
            a.no_verify = 1;
        } else if (strcmp(arg, "--verify") && strcmp(arg, "--serve")) {
            hand_over();        /* --serve: a service that does not answer is the Python command's to start */
        }
    }
    if (npos != 4) hand_over();
    return a;
}

/* -- where the service listens (serve/paths.py) -------------------------------------------- */

static void join(buf *b, const char *a, const char *c) {
    b->n = 0;
    if (c[0] == '/' || !a[0]) {
        puts_(b, c);
        return;
    }
    puts_(b, a);
    if (a[strlen(a) - 1] != '/') puts_(b, "/");
    puts_(b, c);
}

static int is_dir(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static void socket_path(buf *out) {
    buf d = {0}, t = {0};
    const char *v;
    if ((v = getenv("ZKTENSOR_SERVE_DIR")) && v[0]) {
        puts_(&d, v);
    } else if ((v = getenv("XDG_RUNTIME_DIR")) && v[0] && is_dir(v)) {
        join(&d, v, "zktensor");
    } else {                                    /* the cache root's run/ */
        const char *root = getenv("ZKTENSOR_CACHE_DIR"), *cache = getenv("XDG_CACHE_HOME");
        if (!root || !root[0]) {
            buf home = {0};
            if (!cache) {
                const char *h = getenv("HOME");
                if (!h || !h[0]) hand_over();           /* Python's expanduser asks the password file */
                join(&home, h, ".cache");
                cache = home.p;
            }
            join(&t, cache, "zktensor");
            root = t.p;
        }
        join(&d, root, "run");
    }
    join(out, d.p, "serve.sock");
}

/* -- the exchange ----------------------------------------------------------------------- */

static int write_all(int fd, const char *p, size_t n) {
    while (n) {
        ssize_t k = send(fd, p, n, MSG_NOSIGNAL);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return -1;
        p += k, n -= (size_t)k;
    }
    return 0;
}

static int read_all(int fd, char *p, size_t n) {
    while (n) {
        ssize_t k = recv(fd, p, n, 0);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return -1;
        p += k, n -= (size_t)k;
    }
    return 0;
}

/* The connected socket, or -1 where no service answers there. */
static int connect_to(const char *path) {
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof addr.sun_path) return -1;
    strcpy(addr.sun_path, path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    struct timeval two_s = {2, 0}, none = {0, 0};      /* the Python client's connect timeout */
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &two_s, sizeof two_s);
    if (connect(fd, (struct sockaddr *)&addr, sizeof addr) != 0) {
        close(fd);
        return -1;
    }
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &none, sizeof none);
    return fd;
}

/* -- the reply: one JSON object (serve/wire.py) -------------------------------------------
 * Only "ok", "status" and "error" are read; any other value is parsed and skipped. */

typedef struct { int ok, status; buf error; } reply;

static void ws(const char **s, const char *end) {
    while (*s < end && (**s == ' ' || **s == '\t' || **s == '\n' || **s == '\r')) (*s)++;
}

static int hex4(const char *s, const char *end, unsigned *v) {
    *v = 0;
    if (end - s < 4) return -1;
    for (int i = 0; i < 4; i++) {
        char c = s[i];
        unsigned d = c >= '0' && c <= '9' ? (unsigned)(c - '0') : c >= 'a' && c <= 'f' ? (unsigned)(c - 'a' + 10)
                   : c >= 'A' && c <= 'F' ? (unsigned)(c - 'A' + 10) : 16u;
        if (d > 15) return -1;
        *v = *v << 4 | d;
    }
    return 0;
}

static void put_utf8(buf *b, unsigned cp) {
    char u[4];
    size_t n;
    if (cp < 0x80) u[0] = (char)cp, n = 1;
    else if (cp < 0x800) u[0] = (char)(0xc0 | cp >> 6), u[1] = (char)(0x80 | (cp & 0x3f)), n = 2;
    else if (cp < 0x10000)
        u[0] = (char)(0xe0 | cp >> 12), u[1] = (char)(0x80 | (cp >> 6 & 0x3f)), u[2] = (char)(0x80 | (cp & 0x3f)), n = 3;
    else
        u[0] = (char)(0xf0 | cp >> 18), u[1] = (char)(0x80 | (cp >> 12 & 0x3f)), u[2] = (char)(0x80 | (cp >> 6 & 0x3f)),
        u[3] = (char)(0x80 | (cp & 0x3f)), n = 4;
    put(b, u, n);
}

/* A string at *s (its opening quote), decoded into out (when not NULL). */
static int string(const char **s, const char *end, buf *out) {
    const char *p = *s + 1;
    while (p < end && *p != '"') {
        unsigned char c = (unsigned char)*p;
        if (c < 0x20) return -1;
        if (c != '\\') {
            if (out) put(out, p, 1);
            p++;
            continue;
        }
        if (++p >= end) return -1;
        const char *simple = strchr("\"\\/bfnrt", *p);
        if (*p && simple) {
            static const char decoded[] = "\"\\/\b\f\n\r\t";
            if (out) put(out, &decoded[simple - "\"\\/bfnrt"], 1);
            p++;
            continue;
        }
        unsigned cp, lo;
        if (*p != 'u' || hex4(p + 1, end, &cp)) return -1;
        p += 5;
        if (cp >= 0xd800 && cp <= 0xdbff && end - p >= 6 && p[0] == '\\' && p[1] == 'u' && !hex4(p + 2, end, &lo)
            && lo >= 0xdc00 && lo <= 0xdfff) {
            cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
            p += 6;
        } else if (cp >= 0xd800 && cp <= 0xdfff) {
            cp = 0xfffd;        /* a lone surrogate: shown as U+FFFD */
        }
        if (out) put_utf8(out, cp);
    }
    if (p >= end) return -1;
    *s = p + 1;
    return 0;
}

static int value(const char **s, const char *end, int depth, reply *r, const char *key);

static int literal(const char **s, const char *end, const char *word) {
    size_t n = strlen(word);
    if ((size_t)(end - *s) < n || strncmp(*s, word, n)) return -1;
    *s += n;
    return 0;
}

static int number(const char **s, const char *end, long *out) {
    const char *p = *s;
    int neg = 0, digits = 0, integral = 1;
    long v = 0;
    if (p < end && *p == '-') neg = 1, p++;
    while (p < end && *p >= '0' && *p <= '9') {
        if (v < 100000000) v = v * 10 + (*p - '0');
        p++, digits++;
    }
    if (!digits) return -1;
    if (p < end && *p == '.') {
        integral = 0, p++;
        while (p < end && *p >= '0' && *p <= '9') p++;
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        integral = 0, p++;
        if (p < end && (*p == '+' || *p == '-')) p++;
        while (p < end && *p >= '0' && *p <= '9') p++;
    }
    *s = p;
    if (out) *out = integral ? (neg ? -v : v) : -1;
    return 0;
}

static int container(const char **s, const char *end, int depth, reply *r, int object) {
    if (depth > MAX_DEPTH) return -1;
    (*s)++;
    ws(s, end);
    if (*s < end && **s == (object ? '}' : ']')) {
        (*s)++;
        return 0;
    }
    for (;;) {
        buf key = {0};
        if (object) {
            ws(s, end);
            if (*s >= end || **s != '"' || string(s, end, &key)) return -1;
            ws(s, end);
            if (*s >= end || **s != ':') return -1;
            (*s)++;
        }
        int bad = value(s, end, depth + 1, r, depth == 0 && object ? (key.p ? key.p : "") : NULL);
        free(key.p);
        if (bad) return -1;
        ws(s, end);
        if (*s < end && **s == ',') {
            (*s)++;
            continue;
        }
        if (*s < end && **s == (object ? '}' : ']')) {
            (*s)++;
            return 0;
        }
        return -1;
    }
}

/* A value at *s; key: its name where it is one of the top object's fields. */
static int value(const char **s, const char *end, int depth, reply *r, const char *key) {
    ws(s, end);
    if (*s >= end) return -1;
    switch (**s) {
    case '{': return container(s, end, depth, r, 1);
    case '[': return container(s, end, depth, r, 0);
    case '"': return string(s, end, key && !strcmp(key, "error") ? &r->error : NULL);
    case 't':
        if (key && !strcmp(key, "ok")) r->ok = 1;
        return literal(s, end, "true");
    case 'f': return literal(s, end, "false");
    case 'n': return literal(s, end, "null");
    default: {
        long v;
        if (number(s, end, &v)) return -1;
        if (key && !strcmp(key, "status")) r->status = (int)v;
        return 0;
    }
    }
}

static int parse_reply(const char *text, size_t n, reply *r) {
    const char *s = text, *end = text + n;
    r->ok = 0, r->status = 1;
    ws(&s, end);
    if (s >= end || *s != '{' || container(&s, end, 0, r, 1)) return -1;
    ws(&s, end);
    return s == end ? 0 : -1;
}

/* -- main ---------------------------------------------------------------------------------- */

/* Ctrl-C while the service proves: the Python command's line and status (cli.main). The
 * service then writes no file (it sees the connection closed). */
static void interrupted(int sig) {
    static const char msg[] = "zktensor: error: interrupted\n";
    ssize_t n = write(2, msg, sizeof msg - 1);
    (void)n, (void)sig;
    _exit(130);
}


int main(int argc, char **argv) {
    g_argc = argc, g_argv = argv;
    if (argc < 2 || strcmp(argv[1], "prove") != 0) hand_over();
    prove_args a = parse();
    const char *addr = getenv("ZKTENSOR_SERVE_ADDR");
    if (addr && addr[0]) hand_over();           /* a TCP service: the Python client's */

    char cwd[4096];
    if (!getcwd(cwd, sizeof cwd)) hand_over();
    buf req = {0};
    static const char *names[4] = {"zkey", "witness", "proof", "public"};
    puts_(&req, "{");
    put_string_field(&req, "op", "prove_files");
    put_string_field(&req, "cwd", cwd);
    for (int i = 0; i < 4; i++) put_string_field(&req, names[i], a.paths[i]);
    if (a.r1cs) put_string_field(&req, "r1cs", a.r1cs);
    put_raw_field(&req, "check", a.no_check ? "false" : "true");
    put_raw_field(&req, "verify", a.no_check || a.no_verify ? "false" : "true");
    if (a.workers) {
        char n[16];
        snprintf(n, sizeof n, "%d", a.workers);
        put_raw_field(&req, "workers", n);
    }
    const char *stall = getenv("ZKTENSOR_SERVE_TEST_STALL");       /* tests: as the Python client */
    if (stall && stall[0]) {
        char *e;
        double sec = strtod(stall, &e);
        char n[32];
        if (*e || !(sec >= 0 && sec <= 600)) hand_over();
        snprintf(n, sizeof n, "%.3f", sec);
        put_raw_field(&req, "test_stall_s", n);
        const char *node = getenv("ZKTENSOR_SERVE_TEST_STALL_NODE");
        if (node && node[0]) put_string_field(&req, "test_stall_node", node);
    }
    puts_(&req, "}");

    buf sock = {0};
    socket_path(&sock);
    int fd = connect_to(sock.p);
    if (fd < 0) hand_over();                    /* no service: in-process, or --serve starts one */
    struct sigaction on_int;
    memset(&on_int, 0, sizeof on_int);
    on_int.sa_handler = interrupted;
    sigaction(SIGINT, &on_int, NULL);           /* execv puts the default back for the Python command */
    unsigned char len[4] = {(unsigned char)(req.n >> 24), (unsigned char)(req.n >> 16), (unsigned char)(req.n >> 8),
                            (unsigned char)req.n};
    if (write_all(fd, (char *)len, 4) || write_all(fd, req.p, req.n) || read_all(fd, (char *)len, 4))
        prove_in_process();
    uint32_t n = (uint32_t)len[0] << 24 | (uint32_t)len[1] << 16 | (uint32_t)len[2] << 8 | len[3];
    if (n > MAX_REPLY) hand_over();
    char *text = malloc(n ? n : 1);
    if (!text) hand_over();
    if (read_all(fd, text, n)) prove_in_process();
    close(fd);

    reply r = {0};
    if (parse_reply(text, n, &r)) {
        fprintf(stderr, "zktensor: note: the prover service's reply is not one this client reads; asking again "
                        "with the Python client\n");
        hand_over();
    }
    if (r.ok) return 0;
    const char *error = r.error.p ? r.error.p : "the service refused the request";
    if (r.status == 2 && !strncmp(error, "bad request:", 12)) hand_over();  /* a service without prove_files */
    fprintf(stderr, "zktensor: error: %s\n", error);
    return r.status >= 1 && r.status <= 125 ? r.status : 1;
}
