/* TLS interception (see tls.h). Host context, the proxy process; the
 * bytes read from the client are the sandbox's and untrusted. */
#include "net/tls.h"
#include "net/audit.h"
#include "net/proxy-parse.h"
#include "util/clock.h"
#include "util/log.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#define TLS_HEAD_MAX       (32 * 1024) /* one request head */
#define TLS_HANDSHAKE_S    30
#define TLS_IDLE_S         300
#define TLS_LEAF_CACHE     256
#define TLS_CHUNK_LINE_MAX 1024
#define TLS_TARGET_MAX     4096 /* a request target, with its query */

/* A destination that answered a request before taking its whole body
 * (413, 401) and then takes nothing more for this long: the body is given
 * up, the answer has reached the client. */
#define TLS_EARLY_ANSWER_S 2
/* After giving up a body: how long the client's remaining bytes are read
 * and dropped, so that its kernel does not reset the connection under the
 * answer it has still to read. */
#define TLS_LINGER_S 5

struct leaf {
    char host[256];
    SSL_CTX *ctx;
};

struct tls_state {
    const struct tls_config *cfg;
    EVP_PKEY *ca_key;
    X509 *ca_cert;
    EVP_PKEY *leaf_key; /* one key for every leaf of the session */
    SSL_CTX *upstream;
    pthread_mutex_t lock;
    struct leaf leaves[TLS_LEAF_CACHE];
    size_t leaf_count, leaf_next;
    atomic_int running;
};

static const char *ssl_error_text(void)
{
    static _Thread_local char buf[256];
    unsigned long e = ERR_get_error();
    if (!e)
        return "no detail";
    ERR_error_string_n(e, buf, sizeof(buf));
    ERR_clear_error();
    return buf;
}

bool tls_wants(const struct tls_config *cfg, const char *host, int port)
{
    struct allow_decision d;
    for (size_t i = 0; i < cfg->secret_count; i++) {
        allowlist_check_request(&cfg->secrets[i].hosts, host, port, &d);
        if (d.allowed)
            return true;
    }
    for (size_t i = 0; i < cfg->rule_count; i++) {
        allowlist_check_request(&cfg->rules[i].host, host, port, &d);
        if (d.allowed)
            return true;
    }
    return false;
}

/* ---- certificates ---- */

static int add_ext(X509 *cert, X509 *issuer, int nid, const char *value)
{
    X509V3_CTX ctx;
    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, issuer, cert, NULL, NULL, 0);
    X509_EXTENSION *ext = X509V3_EXT_conf_nid(NULL, &ctx, nid, value);
    if (!ext)
        return -1;
    int ok = X509_add_ext(cert, ext, -1);
    X509_EXTENSION_free(ext);
    return ok ? 0 : -1;
}

static X509 *new_cert(EVP_PKEY *key, const char *cn, long valid_s)
{
    X509 *cert = X509_new();
    if (!cert)
        return NULL;
    unsigned char serial[16];
    BIGNUM *bn = NULL;
    if (RAND_bytes(serial, sizeof(serial)) != 1)
        goto fail;
    serial[0] &= 0x7f;
    bn = BN_bin2bn(serial, sizeof(serial), NULL);
    if (!bn || !BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(cert)) || !X509_set_version(cert, 2) ||
        !X509_gmtime_adj(X509_getm_notBefore(cert), -3600) ||
        !X509_gmtime_adj(X509_getm_notAfter(cert), valid_s) || !X509_set_pubkey(cert, key))
        goto fail;
    X509_NAME *name = X509_get_subject_name(cert);
    if (!X509_NAME_add_entry_by_txt(name, "O", MBSTRING_UTF8, (const unsigned char *)"cordon", -1,
                                    -1, 0) ||
        !X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8, (const unsigned char *)cn, -1, -1,
                                    0))
        goto fail;
    BN_free(bn);
    return cert;
fail:
    BN_free(bn);
    X509_free(cert);
    return NULL;
}

static int make_ca(struct tls_state *t, struct cordon_error *err)
{
    t->ca_key = EVP_EC_gen("P-256");
    t->leaf_key = EVP_EC_gen("P-256");
    if (!t->ca_key || !t->leaf_key)
        return error_set(err, EIO, "network: TLS: making the session keys: %s", ssl_error_text());
    char cn[200];
    snprintf(cn, sizeof(cn), "cordon session CA %.100s",
             t->cfg->session_name ? t->cfg->session_name : "");
    t->ca_cert = new_cert(t->ca_key, cn, 30L * 86400);
    if (!t->ca_cert || !X509_set_issuer_name(t->ca_cert, X509_get_subject_name(t->ca_cert)) ||
        add_ext(t->ca_cert, t->ca_cert, NID_basic_constraints, "critical,CA:TRUE,pathlen:0") < 0 ||
        add_ext(t->ca_cert, t->ca_cert, NID_key_usage, "critical,keyCertSign,cRLSign") < 0 ||
        add_ext(t->ca_cert, t->ca_cert, NID_subject_key_identifier, "hash") < 0 ||
        !X509_sign(t->ca_cert, t->ca_key, EVP_sha256()))
        return error_set(err, EIO, "network: TLS: making the session CA: %s", ssl_error_text());
    return 0;
}

static int alpn_select(SSL *ssl, const unsigned char **out, unsigned char *outlen,
                       const unsigned char *in, unsigned int inlen, void *arg)
{
    (void)ssl;
    (void)arg;
    /* Only HTTP/1.1: the heads are read as HTTP/1.1. */
    for (unsigned int i = 0; i < inlen;) {
        unsigned int len = in[i];
        if (i + 1 + len > inlen)
            break;
        if (len == 8 && memcmp(in + i + 1, "http/1.1", 8) == 0) {
            *out = in + i + 1;
            *outlen = 8;
            return SSL_TLSEXT_ERR_OK;
        }
        i += 1 + len;
    }
    return SSL_TLSEXT_ERR_NOACK;
}

/* The server context presenting a leaf for HOST, made once per session. */
static SSL_CTX *leaf_ctx(struct tls_state *t, const char *host)
{
    pthread_mutex_lock(&t->lock);
    for (size_t i = 0; i < t->leaf_count; i++) {
        if (strcasecmp(t->leaves[i].host, host) == 0) {
            SSL_CTX *ctx = t->leaves[i].ctx;
            SSL_CTX_up_ref(ctx);
            pthread_mutex_unlock(&t->lock);
            return ctx;
        }
    }
    SSL_CTX *ctx = NULL;
    X509 *cert = new_cert(t->leaf_key, host, 7L * 86400);
    char san[300];
    unsigned char ip[16];
    bool is_ip = inet_pton(AF_INET, host, ip) == 1 || inet_pton(AF_INET6, host, ip) == 1;
    snprintf(san, sizeof(san), "%s:%s", is_ip ? "IP" : "DNS", host);
    if (!cert || !X509_set_issuer_name(cert, X509_get_subject_name(t->ca_cert)) ||
        add_ext(cert, t->ca_cert, NID_basic_constraints, "critical,CA:FALSE") < 0 ||
        add_ext(cert, t->ca_cert, NID_key_usage, "critical,digitalSignature") < 0 ||
        add_ext(cert, t->ca_cert, NID_ext_key_usage, "serverAuth") < 0 ||
        add_ext(cert, t->ca_cert, NID_authority_key_identifier, "keyid:always") < 0 ||
        add_ext(cert, t->ca_cert, NID_subject_alt_name, san) < 0 ||
        !X509_sign(cert, t->ca_key, EVP_sha256()))
        goto out;
    ctx = SSL_CTX_new(TLS_server_method());
    if (!ctx || !SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) ||
        SSL_CTX_use_certificate(ctx, cert) != 1 || SSL_CTX_use_PrivateKey(ctx, t->leaf_key) != 1) {
        SSL_CTX_free(ctx);
        ctx = NULL;
        goto out;
    }
    SSL_CTX_set_alpn_select_cb(ctx, alpn_select, NULL);
    struct leaf *slot;
    if (t->leaf_count < TLS_LEAF_CACHE) {
        slot = &t->leaves[t->leaf_count++];
    } else {
        slot = &t->leaves[t->leaf_next];
        t->leaf_next = (t->leaf_next + 1) % TLS_LEAF_CACHE;
        SSL_CTX_free(slot->ctx);
    }
    snprintf(slot->host, sizeof(slot->host), "%s", host);
    slot->ctx = ctx;
    SSL_CTX_up_ref(ctx);
out:
    X509_free(cert);
    pthread_mutex_unlock(&t->lock);
    return ctx;
}

int tls_start(const struct tls_config *cfg, struct tls_state **out, struct cordon_error *err)
{
    struct tls_state *t = calloc(1, sizeof(*t));
    if (!t)
        return error_set(err, ENOMEM, "network: TLS");
    t->cfg = cfg;
    pthread_mutex_init(&t->lock, NULL);
    if (make_ca(t, err) < 0)
        return -1;
    t->upstream = SSL_CTX_new(TLS_client_method());
    if (!t->upstream || !SSL_CTX_set_min_proto_version(t->upstream, TLS1_2_VERSION))
        return error_set(err, EIO, "network: TLS: %s", ssl_error_text());
    SSL_CTX_set_verify(t->upstream, SSL_VERIFY_PEER, NULL);
    if (cfg->ca_file) {
        if (SSL_CTX_load_verify_locations(t->upstream, cfg->ca_file, NULL) != 1)
            return error_set(err, EINVAL, "network.ca_file %s: no certificate could be read: %s",
                             cfg->ca_file, ssl_error_text());
    } else if (SSL_CTX_load_verify_locations(t->upstream, "/etc/ssl/certs/ca-certificates.crt",
                                             "/etc/ssl/certs") != 1 &&
               SSL_CTX_set_default_verify_paths(t->upstream) != 1) {
        return error_set(err, EIO, "network: TLS: the host's certificate store: %s",
                         ssl_error_text());
    }
    static const unsigned char alpn[] = "\x08http/1.1";
    SSL_CTX_set_alpn_protos(t->upstream, alpn, sizeof(alpn) - 1);
    *out = t;
    return 0;
}

char *tls_ca_pem(struct tls_state *t, struct cordon_error *err)
{
    BIO *bio = BIO_new(BIO_s_mem());
    char *data = NULL;
    if (!bio || PEM_write_bio_X509(bio, t->ca_cert) != 1) {
        BIO_free(bio);
        error_set(err, EIO, "network: TLS: %s", ssl_error_text());
        return NULL;
    }
    long len = BIO_get_mem_data(bio, &data);
    char *copy = malloc((size_t)len + 1);
    if (copy) {
        memcpy(copy, data, (size_t)len);
        copy[len] = '\0';
    }
    BIO_free(bio);
    if (!copy)
        error_set(err, ENOMEM, "network: TLS");
    return copy;
}

/* ---- one intercepted connection ---- */

enum body_mode { BODY_NONE, BODY_LENGTH, BODY_CHUNKED, BODY_RAW };
enum chunk_state { CHUNK_SIZE, CHUNK_DATA, CHUNK_DATA_END, CHUNK_TRAILER };

struct job {
    struct tls_state *t;
    int client, server;
    char host[256];
    int port;
    SSL *cs, *ss;
    /* client -> server parsing */
    char *head;
    size_t head_len;
    enum body_mode body;
    unsigned long long remaining;
    enum chunk_state chunk;
    char line[TLS_CHUNK_LINE_MAX];
    size_t line_len;
    /* The destination sent bytes while a request was still coming: an
     * early answer. */
    bool answered;
    /* The request's body is not relayed to its end (the destination
     * closed, or stopped reading after its answer). */
    bool given_up;
};

static void job_audit(struct job *j, bool allowed, const char *reason)
{
    struct net_audit_record r = {.session = j->t->cfg->session_name,
                                 .protocol = "https",
                                 .host = j->host,
                                 .port = j->port,
                                 .allowed = allowed,
                                 .reason = reason};
    net_audit_write(j->t->cfg->audit_fd, &r);
    if (!allowed)
        log_warn("network: https %s:%d refused: %s", j->host, j->port, reason);
}

/* Waits until FD is ready for what the last SSL call wanted. */
static bool ssl_wait(SSL *ssl, int ret)
{
    int e = SSL_get_error(ssl, ret);
    if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE)
        return false;
    struct pollfd pfd = {SSL_get_fd(ssl), e == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT, 0};
    int r;
    do {
        r = poll(&pfd, 1, TLS_IDLE_S * 1000);
    } while (r < 0 && errno == EINTR);
    return r > 0;
}

/* The sockets are non-blocking once the handshakes are done: a write
 * waits for room on its own socket (TLS_IDLE_S at most). */
static int ssl_write_all(SSL *ssl, const void *data, size_t len)
{
    const char *p = data;
    while (len > 0) {
        size_t n = 0;
        ERR_clear_error();
        int ret = SSL_write_ex(ssl, p, len, &n);
        if (ret != 1) {
            if (ssl_wait(ssl, ret))
                continue;
            return -1;
        }
        p += n;
        len -= n;
    }
    return 0;
}

/* Reads what is there: 1 with *N bytes, 0 when nothing is (yet: a
 * post-handshake message alone), -1 at the end or on an error. */
static int ssl_read_some(SSL *ssl, char *buf, size_t size, size_t *n)
{
    *n = 0;
    /* SSL_get_error() reads this thread's error queue: what the other
     * connection's end left there must not count for this one. */
    ERR_clear_error();
    int ret = SSL_read_ex(ssl, buf, size, n);
    if (ret == 1)
        return 1;
    int e = SSL_get_error(ssl, ret);
    return e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE ? 0 : -1;
}

/* An answer from cordon inside the client's TLS; the connection ends. */
static void job_refuse(struct job *j, int status, const char *reason)
{
    char head[300], body[900];
    size_t hlen = 0, blen = 0;
    http_refusal_format(status, reason, head, sizeof(head), &hlen, body, sizeof(body), &blen);
    if (ssl_write_all(j->cs, head, hlen) == 0)
        ssl_write_all(j->cs, body, blen);
    job_audit(j, false, reason);
}

/* A request body is on its way (not after an Upgrade: those bytes are a
 * protocol of their own). */
static bool job_in_body(const struct job *j)
{
    return j->body == BODY_LENGTH || j->body == BODY_CHUNKED;
}

/* Passes what the destination sent on to the client: 1 when something
 * was, 0 when nothing is there yet, -1 at the destination's end or on an
 * error. Bytes that arrive during a body, other than an interim answer
 * ("HTTP/1.1 100 Continue", sent whole in one record), are its final
 * answer. */
static int job_answer_some(struct job *j)
{
    char buf[16384];
    size_t n = 0;
    int r = ssl_read_some(j->ss, buf, sizeof(buf), &n);
    if (r <= 0)
        return r;
    bool interim = n > 9 && memcmp(buf, "HTTP/1.", 7) == 0 && buf[8] == ' ' && buf[9] == '1';
    if (job_in_body(j) && !interim)
        j->answered = true;
    return ssl_write_all(j->cs, buf, n) < 0 ? -1 : 1;
}

/* Sends request bytes to the destination. While it takes none, what it
 * sends back still reaches the client: a server may answer (413 Payload
 * Too Large, 401) before reading the whole body, and the client waits for
 * that answer while it sends. When the destination has ended, or has
 * answered and then takes nothing for TLS_EARLY_ANSWER_S, the request is
 * given up (-1): its answer, what there is of it, has been passed on. */
static int job_send_upstream(struct job *j, const void *data, size_t len)
{
    const char *p = data;
    while (len > 0) {
        size_t n = 0;
        ERR_clear_error();
        int ret = SSL_write_ex(j->ss, p, len, &n);
        if (ret == 1) {
            p += n;
            len -= n;
            continue;
        }
        int e = SSL_get_error(j->ss, ret);
        if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE) {
            /* Closed or reset: its answer is still in the socket's queue. */
            while (job_answer_some(j) > 0)
                ;
            j->given_up = job_in_body(j);
            return -1;
        }
        struct pollfd pfd = {j->server, POLLIN | (e == SSL_ERROR_WANT_WRITE ? POLLOUT : 0), 0};
        int r = poll(&pfd, 1, (j->answered ? TLS_EARLY_ANSWER_S : TLS_IDLE_S) * 1000);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            j->given_up = j->answered;
            return -1;
        }
        if ((pfd.revents & (POLLIN | POLLHUP | POLLERR)) && job_answer_some(j) < 0) {
            j->given_up = job_in_body(j);
            return -1;
        }
    }
    return 0;
}

static bool token_eq(const char *a, size_t alen, const char *b)
{
    return alen == strlen(b) && strncasecmp(a, b, alen) == 0;
}

/* How a request's body is framed, from its head. */
struct request_framing {
    long long length; /* Content-Length, or -1 */
    bool chunked, upgrade;
};

/* The request line: METHOD SP origin-form SP HTTP/1.x. METHOD gets the
 * method, PATH the target without query or fragment, *EOL the line's
 * end. Returns -1 when the connection must end (already answered). */
static int job_request_line(struct job *j, const char *head, size_t len, char method[16],
                            char path[TLS_TARGET_MAX], const char **eol_out)
{
    const char *eol = memchr(head, '\r', len);
    const char *sp1 = memchr(head, ' ', (size_t)(eol - head));
    const char *sp2 = sp1 ? memchr(sp1 + 1, ' ', (size_t)(eol - sp1 - 1)) : NULL;
    if (!sp1 || !sp2 || sp1 == head || (size_t)(sp1 - head) >= 16 || sp1[1] != '/' ||
        (size_t)(eol - sp2 - 1) != 8 || strncmp(sp2 + 1, "HTTP/1.", 7) != 0) {
        job_refuse(j, 400, "a malformed request line inside TLS");
        return -1;
    }
    memcpy(method, head, (size_t)(sp1 - head));
    method[sp1 - head] = '\0';
    for (char *m = method; *m; m++) {
        if (*m < 'A' || *m > 'Z') {
            job_refuse(j, 400, "a malformed method inside TLS");
            return -1;
        }
    }
    size_t target_len = (size_t)(sp2 - sp1 - 1);
    if (target_len >= TLS_TARGET_MAX) {
        job_refuse(j, 431, "a request target longer than 4 KiB");
        return -1;
    }
    memcpy(path, sp1 + 1, target_len);
    path[target_len] = '\0';
    path[strcspn(path, "?#")] = '\0';
    *eol_out = eol;
    return 0;
}

/* One header NAME[0..NLEN): VALUE[0..VLEN), trimmed. Returns -1 when the
 * connection must end (already answered). */
static int job_header(struct job *j, const char *line, size_t nlen, const char *v, size_t vlen,
                      struct request_framing *f, bool *host_seen)
{
    if (token_eq(line, nlen, "content-length")) {
        char num[24];
        if (vlen == 0 || vlen >= sizeof(num) || strspn(v, "0123456789") < vlen || f->length >= 0) {
            job_refuse(j, 400, "a malformed or repeated Content-Length inside TLS");
            return -1;
        }
        memcpy(num, v, vlen);
        num[vlen] = '\0';
        f->length = strtoll(num, NULL, 10);
    } else if (token_eq(line, nlen, "transfer-encoding")) {
        if (!token_eq(v, vlen, "chunked") || f->chunked) {
            job_refuse(j, 400, "a Transfer-Encoding other than one \"chunked\" inside TLS");
            return -1;
        }
        f->chunked = true;
    } else if (token_eq(line, nlen, "upgrade")) {
        f->upgrade = true;
    } else if (token_eq(line, nlen, "host")) {
        /* The destination is the CONNECT's host: a Host naming
         * another would let a shared front end (a CDN) route the
         * values elsewhere. */
        char want[300];
        snprintf(want, sizeof(want), "%s:%d", j->host, j->port);
        bool same = token_eq(v, vlen, j->host) || token_eq(v, vlen, want);
        if (!same || *host_seen) {
            char reason[1600];
            snprintf(reason, sizeof(reason),
                     "the Host header (%.*s) is not the tunnel's destination %s:%d",
                     (int)(vlen > 200 ? 200 : vlen), v, j->host, j->port);
            job_refuse(j, 403, reason);
            return -1;
        }
        *host_seen = true;
    }
    return 0;
}

/* The header lines from LINE up to the head's end (HEAD + LEN, after the
 * final CRLF CRLF). Returns -1 when the connection must end (already
 * answered). */
static int job_headers(struct job *j, const char *line, const char *head, size_t len,
                       struct request_framing *f)
{
    bool host_seen = false;
    while (line < head + len - 2) {
        const char *end = memchr(line, '\r', (size_t)(head + len - line));
        if (!end || end[1] != '\n') {
            job_refuse(j, 400, "a malformed header inside TLS");
            return -1;
        }
        const char *colon = memchr(line, ':', (size_t)(end - line));
        if (!colon || colon == line || line[0] == ' ' || line[0] == '\t' ||
            memchr(line, ' ', (size_t)(colon - line))) {
            job_refuse(j, 400, "a malformed header inside TLS (no name, folded or spaced)");
            return -1;
        }
        const char *v = colon + 1;
        while (v < end && (*v == ' ' || *v == '\t'))
            v++;
        size_t vlen = (size_t)(end - v);
        while (vlen > 0 && (v[vlen - 1] == ' ' || v[vlen - 1] == '\t'))
            vlen--;
        if (job_header(j, line, (size_t)(colon - line), v, vlen, f, &host_seen) < 0)
            return -1;
        line = end + 2;
    }
    if (f->chunked && f->length >= 0) {
        job_refuse(j, 400, "both Content-Length and Transfer-Encoding inside TLS");
        return -1;
    }
    return 0;
}

/* Forwards the head with the secrets' values in, exactly as for plain
 * HTTP (not cleartext here). Returns -1 when the connection must end. */
static int job_forward_head(struct job *j, const char *head, size_t len)
{
    const struct tls_config *cfg = j->t->cfg;
    char reason[1600];
    const char *out = head;
    size_t out_len = len;
    char *filled = NULL;
    if (cfg->secret_count > 0) {
        size_t cap = len + (size_t)cfg->secret_count * NET_SECRET_MAX + 1;
        if (cap > TLS_HEAD_MAX + 64 * 1024)
            cap = TLS_HEAD_MAX + 64 * 1024;
        filled = malloc(cap);
        size_t n = 0;
        enum secrets_verdict v =
            filled ? secrets_apply(cfg->secrets, cfg->secret_count, j->host, j->port, false, head,
                                   len, filled, cap, &n, reason, sizeof(reason))
                   : SECRETS_TOOBIG;
        if (v == SECRETS_LEAK || v == SECRETS_TOOBIG) {
            if (filled) {
                explicit_bzero(filled, cap);
                free(filled);
            }
            job_refuse(j, v == SECRETS_LEAK ? 403 : 431,
                       v == SECRETS_LEAK ? reason : "the request head is too large");
            return -1;
        }
        if (v == SECRETS_SUBST) {
            out = filled;
            out_len = n;
            job_audit(j, true, reason);
        }
    }
    int rc = job_send_upstream(j, out, out_len);
    if (filled) {
        explicit_bzero(filled, out_len);
        free(filled);
    }
    return rc;
}

/* Checks one complete request head (HEAD[0..LEN), ending in CRLF CRLF),
 * sets the body framing and forwards it (with the values in). Returns -1
 * when the connection must end (already answered). */
static int job_request(struct job *j, const char *head, size_t len)
{
    /* An early answer belongs to the request it answered: the next one on
     * this connection waits for its destination the full time again. */
    j->answered = false;
    j->given_up = false;
    char method[16], path[TLS_TARGET_MAX];
    const char *eol = NULL;
    if (job_request_line(j, head, len, method, path, &eol) < 0)
        return -1;
    bool odd = http_rule_path_is_odd(path);
    struct request_framing f = {.length = -1};
    if (job_headers(j, eol + 2, head, len, &f) < 0)
        return -1;
    const struct tls_config *cfg = j->t->cfg;
    char reason[1600];
    switch (http_rules_judge(cfg->rules, cfg->rule_count, j->host, j->port, method, path, odd,
                             reason, sizeof(reason))) {
    case HTTP_RULES_ALLOWED:
        job_audit(j, true, reason);
        break;
    case HTTP_RULES_REFUSED:
        job_refuse(j, 403, reason);
        return -1;
    case HTTP_RULES_NONE:
        break;
    }
    if (job_forward_head(j, head, len) < 0)
        return -1;
    if (f.upgrade)
        j->body = BODY_RAW; /* after a protocol switch: bytes as they come */
    else if (f.chunked)
        j->body = BODY_CHUNKED, j->chunk = CHUNK_SIZE, j->line_len = 0;
    else if (f.length > 0)
        j->body = BODY_LENGTH, j->remaining = (unsigned long long)f.length;
    else
        j->body = BODY_NONE;
    return 0;
}

/* Forwards body bytes; returns how many of DATA[0..LEN) belonged to the
 * body (the rest starts the next head), or -1. */
static ssize_t job_body(struct job *j, const char *data, size_t len)
{
    size_t used = 0;
    while (used < len && j->body != BODY_NONE) {
        if (j->body == BODY_RAW) {
            if (job_send_upstream(j, data + used, len - used) < 0)
                return -1;
            return (ssize_t)len;
        }
        if (j->body == BODY_LENGTH || (j->body == BODY_CHUNKED && j->chunk == CHUNK_DATA)) {
            size_t n = len - used;
            if (n > j->remaining)
                n = (size_t)j->remaining;
            if (job_send_upstream(j, data + used, n) < 0)
                return -1;
            used += n;
            j->remaining -= n;
            if (j->remaining == 0)
                j->body == BODY_LENGTH ? (void)(j->body = BODY_NONE)
                                       : (void)(j->chunk = CHUNK_DATA_END);
            continue;
        }
        /* Chunked framing lines: size, the CRLF after data, trailers. */
        char ch = data[used++];
        if (job_send_upstream(j, &ch, 1) < 0)
            return -1;
        if (j->line_len >= sizeof(j->line) - 1) {
            job_refuse(j, 400, "an overlong chunk line inside TLS");
            return -1;
        }
        j->line[j->line_len++] = ch;
        if (ch != '\n')
            continue;
        j->line[j->line_len] = '\0';
        size_t ll = j->line_len;
        j->line_len = 0;
        if (ll < 2 || j->line[ll - 2] != '\r') {
            job_refuse(j, 400, "a malformed chunk inside TLS");
            return -1;
        }
        if (j->chunk == CHUNK_SIZE) {
            char *end;
            errno = 0;
            unsigned long long size = strtoull(j->line, &end, 16);
            if (end == j->line || errno || (*end != '\r' && *end != ';') || size > (1ULL << 40)) {
                job_refuse(j, 400, "a malformed chunk size inside TLS");
                return -1;
            }
            if (size == 0) {
                j->chunk = CHUNK_TRAILER;
            } else {
                j->remaining = size;
                j->chunk = CHUNK_DATA;
            }
        } else if (j->chunk == CHUNK_DATA_END) {
            if (ll != 2) {
                job_refuse(j, 400, "a chunk longer than its size inside TLS");
                return -1;
            }
            j->chunk = CHUNK_SIZE;
        } else if (ll == 2) { /* the empty line after the trailers */
            j->body = BODY_NONE;
        }
    }
    return (ssize_t)used;
}

/* Client bytes: heads are checked and forwarded, bodies pass. */
static int job_from_client(struct job *j, const char *data, size_t len)
{
    while (len > 0) {
        if (j->body != BODY_NONE) {
            ssize_t n = job_body(j, data, len);
            if (n < 0)
                return -1;
            data += n;
            len -= (size_t)n;
            continue;
        }
        size_t take = TLS_HEAD_MAX - j->head_len;
        if (take == 0) {
            job_refuse(j, 431, "a request head larger than 32 KiB inside TLS");
            return -1;
        }
        if (take > len)
            take = len;
        /* Look for the end of the head in what is added (with the 3
         * bytes before it). */
        size_t before = j->head_len;
        memcpy(j->head + j->head_len, data, take);
        j->head_len += take;
        size_t from = before >= 3 ? before - 3 : 0;
        const char *end = NULL;
        for (size_t i = from; i + 4 <= j->head_len; i++) {
            if (memcmp(j->head + i, "\r\n\r\n", 4) == 0) {
                end = j->head + i + 4;
                break;
            }
        }
        if (!end) {
            data += take;
            len -= take;
            continue;
        }
        size_t head_len = (size_t)(end - j->head);
        size_t consumed = head_len - before;
        if (job_request(j, j->head, head_len) < 0)
            return -1;
        j->head_len = 0;
        data += consumed;
        len -= consumed;
    }
    return 0;
}

static void set_timeouts(int fd, int seconds)
{
    struct timeval tv = {.tv_sec = seconds};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

/* The request was given up with its answer sent: the client's remaining
 * bytes are read and dropped (TLS_LINGER_S at most, until it closes) while
 * it reads the answer. Closing at once with its bytes unread would make
 * the kernel reset the connection, and the client could see the reset
 * before the answer. */
static void job_linger(struct job *j)
{
    log_debug("network: https %s:%d: the destination answered before taking the whole "
              "request body; the rest is not sent",
              j->host, j->port);
    char buf[16384];
    long long deadline = clock_now_ms() + TLS_LINGER_S * 1000;
    for (;;) {
        size_t n = 0;
        int r = ssl_read_some(j->cs, buf, sizeof(buf), &n);
        long long left = deadline - clock_now_ms();
        if (r < 0 || left <= 0)
            return;
        if (r > 0 || SSL_pending(j->cs) > 0)
            continue;
        struct pollfd pfd = {j->client, POLLIN, 0};
        if (poll(&pfd, 1, (int)left) <= 0)
            return;
    }
}

static void job_run(struct job *j)
{
    struct tls_state *t = j->t;
    char reason[800];
    for (int i = 0; i < 2; i++) {
        int fd = i ? j->server : j->client;
        fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
        set_timeouts(fd, TLS_HANDSHAKE_S);
    }
    SSL_CTX *lctx = leaf_ctx(t, j->host);
    if (!lctx) {
        snprintf(reason, sizeof(reason), "no certificate could be made for %s: %s", j->host,
                 ssl_error_text());
        job_audit(j, false, reason);
        return;
    }
    j->cs = SSL_new(lctx);
    SSL_CTX_free(lctx);
    if (!j->cs || SSL_set_fd(j->cs, j->client) != 1 || SSL_accept(j->cs) != 1) {
        snprintf(reason, sizeof(reason),
                 "the client's TLS handshake failed (does it trust the session CA?): %s",
                 ssl_error_text());
        job_audit(j, false, reason);
        return;
    }
    j->ss = SSL_new(t->upstream);
    unsigned char ip[16];
    bool is_ip = inet_pton(AF_INET, j->host, ip) == 1 || inet_pton(AF_INET6, j->host, ip) == 1;
    if (!j->ss || SSL_set_fd(j->ss, j->server) != 1 ||
        (is_ip ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(j->ss), j->host) != 1
               : (SSL_set_tlsext_host_name(j->ss, j->host) != 1 ||
                  SSL_set1_host(j->ss, j->host) != 1))) {
        job_refuse(j, 502, "TLS to the destination could not be set up");
        return;
    }
    if (SSL_connect(j->ss) != 1) {
        long v = SSL_get_verify_result(j->ss);
        if (v != X509_V_OK)
            snprintf(reason, sizeof(reason),
                     "the certificate of %s:%d failed verification: %s (network.ca_file names "
                     "the CA to trust)",
                     j->host, j->port, X509_verify_cert_error_string(v));
        else
            snprintf(reason, sizeof(reason), "TLS with %s:%d failed: %s", j->host, j->port,
                     ssl_error_text());
        job_refuse(j, 502, reason);
        return;
    }
    snprintf(reason, sizeof(reason), "TLS intercepted (secrets or network.http_rules name %s)",
             j->host);
    job_audit(j, true, reason);
    for (int i = 0; i < 2; i++) {
        int fd = i ? j->server : j->client;
        fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    }
    j->head = malloc(TLS_HEAD_MAX);
    char *buf = malloc(16384);
    if (!j->head || !buf) {
        free(buf);
        return;
    }
    for (;;) {
        bool cp = SSL_pending(j->cs) > 0, sp = SSL_pending(j->ss) > 0;
        struct pollfd pfd[2] = {{j->client, POLLIN, 0}, {j->server, POLLIN, 0}};
        if (!cp && !sp) {
            int r = poll(pfd, 2, TLS_IDLE_S * 1000);
            if (r < 0 && errno == EINTR)
                continue;
            if (r <= 0)
                break;
        }
        size_t n = 0;
        if (cp || pfd[0].revents) {
            int r = ssl_read_some(j->cs, buf, 16384, &n);
            if (r < 0 || (r > 0 && job_from_client(j, buf, n) < 0))
                break;
        }
        if ((sp || pfd[1].revents) && job_answer_some(j) < 0) {
            /* The destination ended while the client was still sending. */
            j->given_up = job_in_body(j);
            break;
        }
    }
    free(buf);
    if (j->given_up)
        job_linger(j);
    SSL_shutdown(j->cs);
}

static void *job_thread(void *arg)
{
    struct job *j = arg;
    job_run(j);
    if (j->head) {
        explicit_bzero(j->head, TLS_HEAD_MAX);
        free(j->head);
    }
    SSL_free(j->cs);
    SSL_free(j->ss);
    close(j->client);
    close(j->server);
    atomic_fetch_sub(&j->t->running, 1);
    free(j);
    ERR_clear_error();
    return NULL;
}

int tls_intercept(struct tls_state *t, int client, int server, const char *host, int port,
                  struct cordon_error *err)
{
    if (atomic_fetch_add(&t->running, 1) >= TLS_MAX_INTERCEPTED) {
        atomic_fetch_sub(&t->running, 1);
        return error_set(err, EAGAIN, "%d intercepted connections are open already",
                         TLS_MAX_INTERCEPTED);
    }
    struct job *j = calloc(1, sizeof(*j));
    if (!j) {
        atomic_fetch_sub(&t->running, 1);
        return error_set(err, ENOMEM, "network: TLS");
    }
    j->t = t;
    j->client = client;
    j->server = server;
    j->port = port;
    snprintf(j->host, sizeof(j->host), "%s", host);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attr, 1024 * 1024);
    pthread_t tid;
    int e = pthread_create(&tid, &attr, job_thread, j);
    pthread_attr_destroy(&attr);
    if (e != 0) {
        free(j);
        atomic_fetch_sub(&t->running, 1);
        return error_set(err, e, "network: TLS: starting a thread");
    }
    return 0;
}
