/* The worker pool: forked processes that evaluate tasks and send rows back as JSON lines.
 *
 * Why processes and not threads: SimGrid can be initialised once per process, so a point
 * on the simgrid engine needs a fresh process (an "isolated" task); and a point that
 * crashes or hangs must cost that point only. Analytic points take microseconds, so they
 * go to long-lived workers that take task after task (one fork per worker, not per point).
 *
 * Protocol: the parent writes a batch to a worker's command pipe (a count, then that many
 * task numbers, all longs in native byte order); the worker answers with one JSON line per
 * task, in order, on its result pipe. Batches keep the pipe round trip (tens of
 * microseconds) from dominating analytic points (a few microseconds each). Closing the
 * command pipe tells a worker to exit. A worker's stderr goes to a third pipe whose tail
 * explains a death: the task it was on fails, the rest of its batch is handed out again.
 *
 * Interrupts: a worker inherits the parent's SIGINT handler with fork, and a handler that
 * only sets a flag would let a worker run on through Ctrl-C; workers put SIGINT back to its
 * default action, so the Ctrl-C a terminal sends to the whole process group ends them, and a
 * worker that died of SIGINT is an interrupt, not a failed task (when the caller asked for
 * interrupts with opts->stop). On an interrupt the pool kills the runs in flight rather
 * than waiting for them: a SimGrid run takes seconds to minutes, Ctrl-C asks for the
 * result now, and from a terminal those runs have received the SIGINT and died anyway. */
#define _GNU_SOURCE /* sched_getaffinity */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "plan/plan.h"

typedef struct slot {
	pid_t pid;   /* 0: free */
	int cmd;     /* to the worker; -1 for a one-shot worker */
	int res;     /* from the worker; -1 once closed */
	int err;     /* its stderr; -1 once closed */
	long *flight; /* tasks sent and not yet answered, in order */
	int n_flight, cap_flight;
	double start; /* when the first task in flight started */
	char *buf;
	size_t len, cap;
	char tail[512];
	size_t tail_len;
} slot;

typedef struct pool {
	const plan_pool_ops *ops;
	slot *slots;
	int n_slots;
	double timeout;
	long *again; /* tasks to hand out again (a worker died before reaching them) */
	long n_again;
	volatile sig_atomic_t *stop; /* set: interrupted (NULL: interrupts are not handled) */
} pool;

static bool stopped(const pool *P) { return P->stop && *P->stop; }

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

int plan_default_jobs(void)
{
	int cpus = 0;
	cpu_set_t set;
	if (sched_getaffinity(0, sizeof set, &set) == 0)
		cpus = CPU_COUNT(&set);
	long online = sysconf(_SC_NPROCESSORS_ONLN);
	if (cpus <= 0)
		cpus = online > 0 ? (int)online : 1;
	/* Several unbound ranks on one node would each see every CPU: share them. */
	const char *local = getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
	if (!local)
		local = getenv("SLURM_NTASKS_PER_NODE");
	long k = local ? strtol(local, NULL, 10) : 1;
	if (k > 1 && cpus == online)
		cpus = (int)(cpus / k);
	return cpus > 0 ? cpus : 1;
}

static bool write_all(int fd, const void *p, size_t n)
{
	const char *c = p;
	while (n) {
		ssize_t w = write(fd, c, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return false;
		c += w;
		n -= (size_t)w;
	}
	return true;
}

static bool read_all(int fd, void *p, size_t n)
{
	char *c = p;
	while (n) {
		ssize_t r = read(fd, c, n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return false;
		c += r;
		n -= (size_t)r;
	}
	return true;
}

/* ---------------------------------------------------------------- worker --- */
static void worker_run(const plan_pool_ops *ops, int res, long task)
{
	json_t *row = ops->eval(ops->ctx, task);
	char *s = row ? json_dumps(row, JSON_COMPACT | JSON_REAL_PRECISION(17)) : NULL;
	if (!s)
		_exit(3);
	bool ok = write_all(res, s, strlen(s)) && write_all(res, "\n", 1);
	free(s);
	json_decref(row);
	if (!ok)
		_exit(4);
}

static void worker_main(const plan_pool_ops *ops, int cmd, int res, long oneshot)
{
	if (cmd < 0) {
		worker_run(ops, res, oneshot);
		_exit(0);
	}
	long count, task;
	while (read_all(cmd, &count, sizeof count) && count > 0)
		for (long i = 0; i < count; i++) {
			if (!read_all(cmd, &task, sizeof task))
				_exit(5);
			worker_run(ops, res, task);
		}
	_exit(0);
}

/* ---------------------------------------------------------------- parent --- */
static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

static bool spawn(pool *P, slot *s, long oneshot, config_error *err)
{
	int cp[2] = {-1, -1}, rp[2] = {-1, -1}, ep[2] = {-1, -1};
	if ((oneshot < 0 && pipe(cp) != 0) || pipe(rp) != 0 || pipe(ep) != 0) {
		int e = errno;
		close_fd(&cp[0]), close_fd(&cp[1]), close_fd(&rp[0]), close_fd(&rp[1]), close_fd(&ep[0]);
		return config_fail(err, "cannot create a pipe for a worker: %s", strerror(e));
	}
	fflush(NULL); /* nothing buffered in the parent may be written twice */
	pid_t pid = fork();
	if (pid < 0) {
		int e = errno;
		close_fd(&cp[0]), close_fd(&cp[1]), close_fd(&rp[0]), close_fd(&rp[1]), close_fd(&ep[0]), close_fd(&ep[1]);
		return config_fail(err, "cannot fork a worker: %s", strerror(e));
	}
	if (pid == 0) {
		struct sigaction dfl = {.sa_handler = SIG_DFL};
		sigemptyset(&dfl.sa_mask);
		sigaction(SIGINT, &dfl, NULL); /* Ctrl-C ends a worker (see the top of this file) */
		/* The other workers' pipes must close here, or their EOFs would never come. */
		for (int i = 0; i < P->n_slots; i++) {
			if (&P->slots[i] == s || !P->slots[i].pid)
				continue;
			close_fd(&P->slots[i].cmd), close_fd(&P->slots[i].res), close_fd(&P->slots[i].err);
		}
		close_fd(&cp[1]), close_fd(&rp[0]), close_fd(&ep[0]);
		int devnull = open("/dev/null", O_RDWR);
		if (devnull >= 0) {
			dup2(devnull, STDIN_FILENO);
			dup2(devnull, STDOUT_FILENO); /* engines' chatter must not reach the parent's output */
			close(devnull);
		}
		dup2(ep[1], STDERR_FILENO);
		close_fd(&ep[1]);
		worker_main(P->ops, cp[0], rp[1], oneshot);
	}
	close_fd(&cp[0]), close_fd(&rp[1]), close_fd(&ep[1]);
	*s = (slot){.pid = pid, .cmd = cp[1], .res = rp[0], .err = ep[0]};
	return true;
}

static bool add_flight(slot *s, long task)
{
	if (s->n_flight == s->cap_flight) {
		int cap = s->cap_flight ? s->cap_flight * 2 : 16;
		long *f = realloc(s->flight, (size_t)cap * sizeof *f);
		if (!f)
			return false;
		s->flight = f;
		s->cap_flight = cap;
	}
	s->flight[s->n_flight++] = task;
	return true;
}

static long pop_flight(slot *s)
{
	long t = s->flight[0];
	memmove(s->flight, s->flight + 1, (size_t)(s->n_flight - 1) * sizeof *s->flight);
	s->n_flight--;
	return t;
}

/* Sends count tasks as one batch. */
static bool send_batch(slot *s, const long *tasks, long count)
{
	for (long i = 0; i < count; i++)
		if (!add_flight(s, tasks[i]))
			return false;
	s->start = now();
	long c = count;
	return write_all(s->cmd, &c, sizeof c) && write_all(s->cmd, tasks, (size_t)count * sizeof *tasks);
}

/* Why a worker ended, for the failed row: its exit status and last stderr line. */
static void death_reason(slot *s, int status, char *buf, size_t len)
{
	char what[96];
	if (WIFSIGNALED(status))
		snprintf(what, sizeof what, "worker process killed by signal %d (%s)", WTERMSIG(status),
			 strsignal(WTERMSIG(status)));
	else if (WIFEXITED(status))
		snprintf(what, sizeof what, "worker process exited with status %d before reporting", WEXITSTATUS(status));
	else
		snprintf(what, sizeof what, "worker process ended before reporting");
	/* The last non-empty line of its stderr. */
	s->tail[s->tail_len < sizeof s->tail ? s->tail_len : sizeof s->tail - 1] = '\0';
	char *end = s->tail + strlen(s->tail);
	while (end > s->tail && (end[-1] == '\n' || end[-1] == '\r'))
		*--end = '\0';
	char *start = strrchr(s->tail, '\n');
	start = start ? start + 1 : s->tail;
	if (*start)
		snprintf(buf, len, "%s: %s", what, start);
	else
		snprintf(buf, len, "%s", what);
}

static void report_failure(pool *P, long task, const char *why)
{
	json_t *row = P->ops->failed(P->ops->ctx, task, why);
	if (row) {
		P->ops->done(P->ops->ctx, task, row);
		json_decref(row);
	}
}

/* Ends a worker: kill when asked, reap; the task it was on fails (with why, or the
 * reason it died), the rest of its batch goes back to the queue. On an interrupt (the pool's
 * stop flag, or this worker died of SIGINT, which sets it) its tasks are dropped unreported. */
static void retire(pool *P, slot *s, bool kill_it, const char *why)
{
	close_fd(&s->cmd);
	if (kill_it)
		kill(s->pid, SIGKILL);
	/* Drain stderr so its last words are in the tail. */
	while (s->err >= 0) {
		char b[256];
		ssize_t r = read(s->err, b, sizeof b);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		for (ssize_t i = 0; i < r; i++) {
			if (s->tail_len >= sizeof s->tail - 1) {
				memmove(s->tail, s->tail + 128, s->tail_len - 128);
				s->tail_len -= 128;
			}
			s->tail[s->tail_len++] = b[i];
		}
	}
	int status = 0;
	while (waitpid(s->pid, &status, 0) < 0 && errno == EINTR)
		;
	if (P->stop && WIFSIGNALED(status) && WTERMSIG(status) == SIGINT)
		*P->stop = 1;
	if (s->n_flight > 0 && !stopped(P)) {
		char reason[768];
		if (why)
			snprintf(reason, sizeof reason, "%s", why);
		else
			death_reason(s, status, reason, sizeof reason);
		long head = pop_flight(s);
		for (int i = s->n_flight - 1; i >= 0; i--)
			P->again[P->n_again++] = s->flight[i];
		s->n_flight = 0;
		report_failure(P, head, reason);
	}
	close_fd(&s->res), close_fd(&s->err);
	free(s->buf);
	free(s->flight);
	*s = (slot){.cmd = -1, .res = -1, .err = -1};
}

/* Handles the complete lines in a worker's buffer. */
static void take_lines(pool *P, slot *s)
{
	char *nl;
	while (s->len && (nl = memchr(s->buf, '\n', s->len))) {
		size_t n = (size_t)(nl - s->buf);
		if (s->n_flight > 0) {
			long task = pop_flight(s);
			s->start = now(); /* the next task of the batch starts now */
			json_t *row = json_loadb(s->buf, n, 0, NULL);
			if (row && json_is_object(row))
				P->ops->done(P->ops->ctx, task, row);
			else
				report_failure(P, task, "worker sent a malformed row");
			json_decref(row);
		}
		memmove(s->buf, nl + 1, s->len - n - 1);
		s->len -= n + 1;
	}
}

static bool read_result(slot *s)
{
	if (s->cap - s->len < 4096) {
		size_t cap = s->cap ? s->cap * 2 : 8192;
		char *b = realloc(s->buf, cap);
		if (!b)
			return false;
		s->buf = b;
		s->cap = cap;
	}
	ssize_t r = read(s->res, s->buf + s->len, s->cap - s->len);
	if (r < 0 && errno == EINTR)
		return true;
	if (r <= 0)
		return false;
	s->len += (size_t)r;
	return true;
}

static void read_err(slot *s)
{
	char b[512];
	ssize_t r = read(s->err, b, sizeof b);
	if (r <= 0) {
		if (!(r < 0 && errno == EINTR))
			close_fd(&s->err);
		return;
	}
	for (ssize_t i = 0; i < r; i++) {
		if (s->tail_len >= sizeof s->tail - 1) {
			memmove(s->tail, s->tail + 128, s->tail_len - 128);
			s->tail_len -= 128;
		}
		s->tail[s->tail_len++] = b[i];
	}
}

static slot *free_slot(pool *P)
{
	for (int i = 0; i < P->n_slots; i++)
		if (!P->slots[i].pid)
			return &P->slots[i];
	return NULL;
}

static slot *idle_worker(pool *P)
{
	for (int i = 0; i < P->n_slots; i++)
		if (P->slots[i].pid && P->slots[i].cmd >= 0 && P->slots[i].n_flight == 0)
			return &P->slots[i];
	return NULL;
}

/* The next task to hand out: first those a dead worker left, then the list in order. */
static bool next_task(pool *P, const long *tasks, long n, long *next, long *t)
{
	if (P->n_again) {
		*t = P->again[--P->n_again];
		return true;
	}
	if (*next < n) {
		*t = tasks[(*next)++];
		return true;
	}
	return false;
}

static void unget_task(pool *P, long t) { P->again[P->n_again++] = t; }

bool plan_pool_run(const long *tasks, long n, const plan_pool_opts *o, const plan_pool_ops *ops, config_error *err)
{
	pool P = {.ops = ops};
	int jobs = o && o->jobs > 0 ? o->jobs : plan_default_jobs();
	if (n > 0 && jobs > n)
		jobs = (int)n;
	if (jobs < 1)
		jobs = 1;
	P.n_slots = jobs;
	P.timeout = o ? o->timeout_s : 0;
	P.stop = o ? o->stop : NULL;
	double tick = o && o->tick_s > 0 ? o->tick_s : 0.2;
	P.slots = calloc((size_t)jobs, sizeof *P.slots);
	P.again = malloc((size_t)(n > 0 ? n : 1) * sizeof *P.again);
	long *batch = malloc(256 * sizeof *batch);
	struct pollfd *pfd = calloc((size_t)jobs * 2, sizeof *pfd);
	int *who = calloc((size_t)jobs * 2, sizeof *who);
	if (!P.slots || !P.again || !batch || !pfd || !who) {
		free(P.slots), free(P.again), free(batch), free(pfd), free(who);
		return config_fail(err, "out of memory");
	}
	for (int i = 0; i < jobs; i++)
		P.slots[i] = (slot){.cmd = -1, .res = -1, .err = -1};
	/* A worker that died would make the next write to it raise SIGPIPE here. */
	struct sigaction ign = {.sa_handler = SIG_IGN}, old;
	sigemptyset(&ign.sa_mask);
	sigaction(SIGPIPE, &ign, &old);

	bool ok = true;
	long next = 0;
	for (;;) {
		/* Hand out work while there is room. */
		long t;
		while (ok && !stopped(&P) && next_task(&P, tasks, n, &next, &t)) {
			bool iso = ops->isolated && ops->isolated(ops->ctx, t);
			slot *s = iso ? NULL : idle_worker(&P);
			if (!s) {
				s = free_slot(&P);
				if (!s && iso && (s = idle_worker(&P)) != NULL)
					retire(&P, s, false, NULL); /* make room for a fresh process */
				if (!s) {
					unget_task(&P, t);
					break;
				}
				if (!spawn(&P, s, iso ? t : -1, err)) {
					unget_task(&P, t);
					ok = false;
					break;
				}
				if (iso) {
					ok = add_flight(s, t);
					s->start = now();
					continue;
				}
			}
			/* A batch of non-isolated tasks: small enough that the workers share the
			 * tail of the list evenly. */
			long left = (n - next) + P.n_again + 1, want = left / ((long)jobs * 8);
			want = want < 1 ? 1 : want > 256 ? 256 : want;
			long k = 0;
			batch[k++] = t;
			while (k < want && next_task(&P, tasks, n, &next, &t)) {
				if (ops->isolated && ops->isolated(ops->ctx, t)) {
					unget_task(&P, t);
					break;
				}
				batch[k++] = t;
			}
			if (!send_batch(s, batch, k))
				retire(&P, s, true, NULL); /* its first task fails, the rest run elsewhere */
		}
		int busy = 0, nf = 0;
		for (int i = 0; i < jobs; i++) {
			slot *s = &P.slots[i];
			if (!s->pid)
				continue;
			busy += s->n_flight > 0;
			if (s->res >= 0)
				pfd[nf] = (struct pollfd){.fd = s->res, .events = POLLIN}, who[nf++] = i;
			if (s->err >= 0)
				pfd[nf] = (struct pollfd){.fd = s->err, .events = POLLIN}, who[nf++] = i;
		}
		if (!ok || stopped(&P) || (next >= n && P.n_again == 0 && busy == 0))
			break;
		double wait = tick, tnow = now();
		if (P.timeout > 0)
			for (int i = 0; i < jobs; i++)
				if (P.slots[i].pid && P.slots[i].n_flight > 0) {
					double rest = P.slots[i].start + P.timeout - tnow;
					if (rest < wait)
						wait = rest > 0 ? rest : 0;
				}
		int r = poll(pfd, (nfds_t)nf, (int)(wait * 1000) + 1);
		if (r < 0 && errno != EINTR) {
			ok = config_fail(err, "poll: %s", strerror(errno));
			break;
		}
		for (int j = 0; r > 0 && j < nf; j++) {
			slot *s = &P.slots[who[j]];
			if (!pfd[j].revents || !s->pid)
				continue;
			if (pfd[j].fd == s->err) {
				read_err(s);
			} else if (pfd[j].fd == s->res) {
				bool more = read_result(s);
				take_lines(&P, s);
				if (!more) /* EOF: a one-shot worker that reported, or a death */
					retire(&P, s, false, NULL);
			}
		}
		if (P.timeout > 0) {
			tnow = now();
			for (int i = 0; i < jobs; i++) {
				slot *s = &P.slots[i];
				if (s->pid && s->n_flight > 0 && tnow - s->start >= P.timeout) {
					char why[96];
					snprintf(why, sizeof why, "timed out after %g s", P.timeout);
					retire(&P, s, true, why);
				}
			}
		}
		if (ops->tick)
			ops->tick(ops->ctx);
	}
	/* Long-lived workers exit when their command pipe closes; on an error or an interrupt
	 * every worker is killed, and the tasks in flight are dropped. */
	const bool finish = ok && !stopped(&P);
	for (int i = 0; i < jobs; i++)
		if (P.slots[i].pid) {
			slot *s = &P.slots[i];
			close_fd(&s->cmd);
			while (finish && s->res >= 0 && read_result(s))
				take_lines(&P, s);
			retire(&P, s, !finish, NULL);
		}
	sigaction(SIGPIPE, &old, NULL);
	free(P.slots), free(P.again), free(batch), free(pfd), free(who);
	return ok;
}
