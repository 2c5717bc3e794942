/* httpserve.c - the tests' loopback file server (see httpserve.h). */
#include "httpserve.h"

#include "clirun.h"
#include "util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <gnutls/crypto.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static void answer(int fd, const char *dir)
{
	char req[2048];
	size_t n = 0;
	while (n + 1 < sizeof req) {
		ssize_t r = recv(fd, req + n, sizeof req - 1 - n, 0);
		if (r <= 0)
			break;
		n += (size_t)r;
		req[n] = 0;
		if (strstr(req, "\r\n\r\n"))
			break;
	}
	req[n] = 0;
	char path[1024] = "";
	char *file = NULL;
	if (sscanf(req, "GET %1023s", path) == 1 && path[0] == '/' && !strstr(path, ".."))
		file = strprintf("%s%s", dir, path);
	char *body = NULL;
	size_t len = 0;
	struct stat st;
	if (file && stat(file, &st) == 0 && S_ISREG(st.st_mode) &&
	    read_file(file, &body, &len) == 0) {
		char hdr[128];
		int h = snprintf(hdr, sizeof hdr, "HTTP/1.0 200 OK\r\nContent-Length: %zu\r\n\r\n", len);
		if (write(fd, hdr, (size_t)h) == h)
			for (size_t off = 0; off < len;) {
				ssize_t w = write(fd, body + off, len - off);
				if (w <= 0)
					break;
				off += (size_t)w;
			}
	} else {
		static const char nf[] = "HTTP/1.0 404 Not Found\r\nContent-Length: 0\r\n\r\n";
		if (write(fd, nf, sizeof nf - 1) < 0)
			perror("httpserve");
	}
	free(body);
	free(file);
}

int httpserve_start(struct httpserve *h)
{
	memset(h, 0, sizeof *h);
	char t[] = "/tmp/pvagent-test-http.XXXXXX";
	if (!mkdtemp(t))
		return -1;
	h->dir = strdup(t);
	int ls = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t sl = sizeof sa;
	if (!h->dir || ls < 0 || bind(ls, (struct sockaddr *)&sa, sizeof sa) < 0 ||
	    listen(ls, 64) < 0 || getsockname(ls, (struct sockaddr *)&sa, &sl) < 0) {
		fprintf(stderr, "httpserve: %s\n", strerror(errno));
		if (ls >= 0)
			close(ls);
		return -1;
	}
	h->port = ntohs(sa.sin_port);
	h->base = strprintf("http://127.0.0.1:%u", h->port);
	h->pid = fork();
	if (h->pid < 0) {
		close(ls);
		return -1;
	}
	if (h->pid == 0) {
		signal(SIGPIPE, SIG_IGN);
		for (;;) {
			int fd = accept(ls, NULL, NULL);
			if (fd < 0)
				continue;
			answer(fd, h->dir);
			close(fd);
		}
	}
	close(ls);
	return 0;
}

int httpserve_put(struct httpserve *h, const char *name, const void *data, size_t len)
{
	char *path = strprintf("%s/%s", h->dir, name);
	FILE *f = path ? fopen(path, "wb") : NULL;
	int ok = f && fwrite(data, 1, len, f) == len;
	if (f && fclose(f) != 0)
		ok = 0;
	free(path);
	return ok ? 0 : -1;
}

char *httpserve_put_sum(struct httpserve *h, const char *name, const void *data, size_t len,
			int bits)
{
	unsigned char md[64];
	gnutls_digest_algorithm_t alg = bits == 512 ? GNUTLS_DIG_SHA512 : GNUTLS_DIG_SHA256;
	size_t n = gnutls_hash_get_len(alg);
	if (httpserve_put(h, name, data, len) < 0 || gnutls_hash_fast(alg, data, len, md) < 0)
		return NULL;
	char *hex = malloc(2 * n + 1);
	for (size_t i = 0; hex && i < n; i++)
		snprintf(hex + 2 * i, 3, "%02x", md[i]);
	return hex;
}

char *httpserve_put_qcow2(struct httpserve *h, const char *name, unsigned long long vsize)
{
	unsigned char b[512] = {0};
	b[0] = (unsigned char)'Q';
	b[1] = (unsigned char)'F';
	b[2] = (unsigned char)'I';
	b[3] = 0xfb;
	b[7] = 3;
	for (int i = 0; i < 8; i++)
		b[24 + i] = (unsigned char)(vsize >> (56 - 8 * i));
	b[100] = (unsigned char)strlen(name);
	char *hex = httpserve_put_sum(h, name, b, sizeof b, 256);
	char *arg = hex ? strprintf("sha256:%s", hex) : NULL;
	free(hex);
	return arg;
}

void httpserve_stop(struct httpserve *h)
{
	if (h->pid > 0) {
		kill(h->pid, SIGKILL);
		waitpid(h->pid, NULL, 0);
		h->pid = 0;
	}
	if (h->dir)
		test_remove_tree(h->dir);
	free(h->dir);
	free(h->base);
	h->dir = h->base = NULL;
}
