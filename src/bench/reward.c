/* compute_score in a sandbox: reward.py is the task set's code, but the
 * answer it reads is the model's, written in a sandbox; so it runs under
 * hutch exec, without network, bounded in time, memory and processes, and
 * the answer reaches it on its stdin as data (Python's marshal format, made
 * here), never as code.  A fixed driver answers each request with one line:
 * "score X" or "error KIND TEXT", marked with a secret of that request.
 * A worker slot's scoring sandbox answers one task after another (python3
 * and reward.py's imports once per slot); a task whose slot has none starts
 * one of its own. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"
#include "error.h"
#include "util.h"

#define REWARD_OUT_MAX (64u << 10)
/* Beyond the time limit: the sandbox's start and removal. */
#define PY_SLACK 30.0

/* The driver: python3 -I driver.py MODULE FUNC.  It loads the task folder's
 * MODULE first (off the task's critical path: the sandbox and python start
 * beside the slot's agent), then answers requests on stdin, each a
 * line "SECRET SIZE" and SIZE bytes of args.  Each request runs in a
 * process forked for it, which holds neither the requests' stream nor the
 * result's fd; after it, everything else of the sandbox is killed and
 * reaped (the driver is their subreaper), /tmp and /dev/shm are emptied,
 * and what a process of the sandbox, as the same user, could have changed
 * for the next request is compared with what it was at the start: /dev's
 * tree, /tmp's and /dev/shm's modes, owners and ACLs, their free space,
 * the System V IPC objects (the sandbox has an IPC namespace of its own),
 * the sockets of its network namespace (a TIME_WAIT holds a port), the
 * stderr pipe's size, and the driver's and init's limits, nice value,
 * scheduling, CPU affinity, I/O priority and OOM score.  A reward.py that
 * keeps a file or shared memory open from its import would share it with
 * every request: then each answer is its sandbox's last.  A sandbox where
 * that fails ends
 * after its answer, and the runner starts another.  With the root
 * read-only (--read-only), nothing a request can write outlives it, so no
 * answer sees what an earlier one left.  The request's process writes its
 * output through a file description of its own (O_ASYNC, F_SETOWN and
 * O_NONBLOCK stay with it), and POSIX message queues, which no listing
 * shows, cannot be made (RLIMIT_MSGQUEUE 0).
 *
 * The result goes out on a copy of the original stdout made before any
 * task-set code ran: not inheritable (os.dup), so nothing reward.py starts
 * has it, with fd 1 pointed at stderr; the process made non-dumpable, so
 * that another process of the sandbox cannot reopen it through
 * /proc/PID/fd or read the secret from its memory (a python3 without
 * ctypes cannot make it so: it scores nothing, an ImportError that stops
 * the run at its first check, rather than a score any process of the
 * sandbox could have written); and the result line begins with the
 * secret, so that anything else printed to the sandbox's stdout (by code
 * the answer had run, before or after the driver's line) is not taken for
 * it.  The request's process hands its result to the driver as the last
 * line on a pipe of its own.  Code run inside that process (reward.py's
 * exec of an answer) is reward.py's to trust.  The driver's line carries
 * the request's CPU time ("cpu=USEC"): its process's, what that left
 * (reaped by the driver), and the driver's own; ",last" after it says the
 * sandbox ends after this answer.
 *
 * It imports little that Python has not loaded at its start (json pulled in
 * re, enum and collections, and importlib.util contextlib: 10 ms of CPU, as
 * much as python's start): _ctypes first, then ctypes, resource, fcntl and
 * select for the checks between requests, once per sandbox.
 * The args come as marshal data (pyargs_put), which marshal.loads turns
 * into values without running anything; the module is loaded by the same
 * functions importlib.util's spec_from_file_location and module_from_spec
 * are; prctl is called through _ctypes alone, as ctypes.CDLL would call it
 * (ctypes itself where that fails); and the result is a score's repr or
 * text escaped for one line (\\, \n, \0, and \s for a space in an error's
 * kind), read back strictly (parse_result). */
static const char driver_py[] =
    "import marshal, os, sys, time\n"
    "import _frozen_importlib as bootstrap, _frozen_importlib_external as external\n"
    "result_fd = os.dup(1)\n"
    "# No POSIX message queue: they outlive their processes, and no listing\n"
    "# shows them to be emptied.\n"
    "try:\n"
    "    import resource\n"
    "    resource.setrlimit(resource.RLIMIT_MSGQUEUE, (0, 0))\n"
    "    no_mqueue = True\n"
    "except BaseException:\n"
    "    no_mqueue = False\n"
    "os.dup2(2, 1)\n"
    "sys.stdout = sys.stderr\n"
    "def prctl(*args):\n"
    "    try:\n"
    "        import _ctypes\n"
    "        class Func(_ctypes.CFuncPtr):\n"
    "            _flags_ = _ctypes.FUNCFLAG_CDECL\n"
    "        class Libc:\n"
    "            _handle = _ctypes.dlopen(None)\n"
    "        return Func(('prctl', Libc))(*args)\n"
    "    except Exception:\n"
    "        import ctypes\n"
    "        return ctypes.CDLL(None).prctl(*args)\n"
    "try:\n"
    "    undumpable = prctl(4, 0, 0, 0, 0) == 0  # PR_SET_DUMPABLE\n"
    "    prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER: what a request leaves comes back here\n"
    "except BaseException:\n"
    "    undumpable = False\n"
    "def esc(t):\n"
    "    return t.encode('utf-8', 'backslashreplace').replace(b'\\\\', b'\\\\\\\\').replace(b'\\n', "
    "b'\\\\n').replace(b'\\0', b'\\\\0')\n"
    "def error(kind, text):\n"
    "    # Cut: an error may quote the whole answer (float(answer)), and the\n"
    "    # result line must stay well within what the runner reads of it.\n"
    "    return b'error ' + esc(kind[:200]).replace(b' ', b'\\\\s') + b' ' + esc(text[:4000])\n"
    "def score(mod, a):\n"
    "    if not hasattr(mod, 'compute_score'):\n"
    "        raise AttributeError('reward.py must define compute_score function')\n"
    "    s = float(mod.compute_score(a['answer'], a['ground_truth'], **a['kwargs']))\n"
    "    if s - s == 0:  # finite: not inf, nor nan (math is one more .so to load)\n"
    "        return b'score ' + repr(s).encode()\n"
    "    return error('ValueError', 'compute_score returned %r' % s)\n"
    "def prompt(mod, a):\n"
    "    f = getattr(mod, 'create_prompt', None)\n"
    "    return b'prompt ' + esc(str(f(a) if f else a['problem_statement']))\n"
    "def answer(data):\n"
    "    try:\n"
    "        if failed is not None:\n"
    "            raise failed\n"
    "        return (score if sys.argv[2] == 'score' else prompt)(mod, marshal.loads(data))\n"
    "    except BaseException as e:\n"
    "        return error(type(e).__name__, '%s: %s' % (type(e).__name__, e))\n"
    "def write(fd, b):\n"
    "    while b:\n"
    "        b = b[os.write(fd, b):]\n"
    "def wipe(d):\n"
    "    for e in os.scandir(d):\n"
    "        if e.is_dir(follow_symlinks=False):\n"
    "            os.chmod(e.path, 0o700)\n"
    "            wipe(e.path)\n"
    "            os.rmdir(e.path)\n"
    "        else:\n"
    "            os.unlink(e.path)\n"
    "def attrs(p):\n"
    "    st = os.stat(p, follow_symlinks=False)\n"
    "    return (p, st.st_mode, st.st_uid, st.st_gid, st.st_ino, sorted(os.listxattr(p, follow_symlinks=False)),\n"
    "            os.readlink(p) if os.path.islink(p) else '')\n"
    "def tree(d):\n"
    "    out = [attrs(d)]\n"
    "    for e in os.scandir(d):\n"
    "        if e.is_dir(follow_symlinks=False) and e.path != '/dev/shm':\n"
    "            out += tree(e.path)\n"
    "        else:\n"
    "            out.append(attrs(e.path))\n"
    "    return out\n"
    "def space():\n"
    "    st = os.statvfs('/tmp')  # /dev/shm is on the same tmpfs\n"
    "    return st.f_bfree, st.f_ffree\n"
    "def read(p):\n"
    "    try:\n"
    "        with open(p, 'rb') as f:\n"
    "            return f.read()\n"
    "    except OSError as e:\n"
    "        return e.errno\n"
    "# ioprio_get and sched_getattr (its utilisation clamps), which os lacks, by\n"
    "# number (x86-64, arm64, riscv64: where hutch's seccomp program is built).\n"
    "NR = {'x86_64': (252, 315), 'aarch64': (31, 275), 'riscv64': (31, 275)}.get(os.uname().machine)\n"
    "def sched_io(pid):\n"
    "    try:\n"
    "        import ctypes\n"
    "    except ImportError:\n"
    "        return None  # then it scores nothing (undumpable below)\n"
    "    if NR is None:\n"
    "        return None\n"
    "    libc = ctypes.CDLL(None, use_errno=True)\n"
    "    attr = ctypes.create_string_buffer(64)\n"
    "    r = libc.syscall(NR[1], pid, attr, 64, 0)\n"
    "    return libc.syscall(NR[0], 1, pid), r, attr.raw  # IOPRIO_WHO_PROCESS\n"
    "def state():\n"
    "    # The driver's and init's limits, priorities and scheduling (which any\n"
    "    # process of the sandbox, as the same user, may lower or raise), the\n"
    "    # writable places' own modes, owners and ACLs, and /dev's whole tree.\n"
    "    r = []\n"
    "    for pid in (0, 1):\n"
    "        p = '/proc/%s/' % (pid or 'self')\n"
    "        r += [read(p + 'limits'), read(p + 'oom_score_adj'), read(p + 'autogroup'),\n"
    "              os.getpriority(os.PRIO_PROCESS, pid), os.sched_getscheduler(pid),\n"
    "              os.sched_getparam(pid).sched_priority, sorted(os.sched_getaffinity(pid)), sched_io(pid)]\n"
    "    # The stderr pipe's size (the pipe's, whoever sets it), and the sockets\n"
    "    # of the sandbox's network namespace (a TIME_WAIT holds its port): its\n"
    "    # counts in sockstat (the rest there is the host's), and unix sockets.\n"
    "    import fcntl\n"
    "    r.append(fcntl.fcntl(2, 1032))  # F_GETPIPE_SZ\n"
    "    for k in ('sockstat', 'sockstat6'):\n"
    "        t = read('/proc/net/' + k)\n"
    "        for line in (t if isinstance(t, bytes) else b'').splitlines():\n"
    "            w = line.split()\n"
    "            r.append([w[0]] + [w[i + 1] for i in range(1, len(w) - 1, 2) if w[i] in (b'used', b'inuse', b'tw')])\n"
    "    t = read('/proc/net/unix')\n"
    "    r.append(t.count(b'\\n') if isinstance(t, bytes) else t)\n"
    "    # The System V IPC objects (the sandbox's own IPC namespace: none at its\n"
    "    # start), which the next request could find.\n"
    "    for k in ('shm', 'sem', 'msg'):\n"
    "        with open('/proc/sysvipc/' + k, 'rb') as f:\n"
    "            r.append(f.read().count(b'\\n'))\n"
    "    return r + [attrs('/tmp'), attrs('/dev/shm')] + sorted(tree('/dev'), key=repr)\n"
    "def others():\n"
    "    return [p for p in os.listdir('/proc') if p.isdigit() and int(p) not in (1, os.getpid())]\n"
    "def reset():\n"
    "    # Nothing of one request may reach the next: its processes killed and\n"
    "    # reaped (their CPU time counted), the writable places emptied (the\n"
    "    # root is read-only), /dev and IPC as they were.  False: this sandbox is\n"
    "    # done.\n"
    "    cpu = 0.0\n"
    "    for _ in range(100):\n"
    "        try:\n"
    "            os.kill(-1, 9)\n"
    "        except ProcessLookupError:\n"
    "            pass\n"
    "        try:\n"
    "            while True:\n"
    "                ru = os.wait4(-1, 0)[2]\n"
    "                cpu += ru.ru_utime + ru.ru_stime\n"
    "        except ChildProcessError:\n"
    "            pass\n"
    "        if not others():\n"
    "            break\n"
    "    else:\n"
    "        return False, cpu\n"
    "    try:\n"
    "        for d in ('/tmp', '/dev/shm'):\n"
    "            wipe(d)\n"
    "        if state() != state0:\n"
    "            return False, cpu\n"
    "        # A deleted file held only in flight (SCM_RIGHTS in a socket that\n"
    "        # holds itself) is freed by the kernel's unix GC, later: wait for it.\n"
    "        for _ in range(100):\n"
    "            if all(a >= b for a, b in zip(space(), space0)):\n"
    "                return True, cpu\n"
    "            time.sleep(0.01)\n"
    "    except Exception:  # RecursionError of a deep tree too\n"
    "        pass\n"
    "    return False, cpu\n"
    "def held():\n"
    "    # Open files and shared mappings: what a forked process shares with the\n"
    "    # driver (an offset, flags, locks, memory), so with later requests.\n"
    "    shared = [l for l in read('/proc/self/maps').splitlines() if l.split()[1:2] and l.split()[1][3:] == b's']\n"
    "    return set(os.listdir('/proc/self/fd')), len(shared)\n"
    "held0 = held()\n"
    "mod = failed = None\n"
    "try:\n"
    "    if sys.argv[2] == 'score' and not undumpable:\n"
    "        raise ImportError('the scoring driver cannot make itself undumpable (prctl through ctypes, which this "
    "python3 lacks): the code compute_score runs could read its secret and forge its result')\n"
    "    if sys.argv[2] == 'score' and not no_mqueue:\n"
    "        raise ImportError('the scoring driver cannot forbid POSIX message queues (setrlimit through the resource "
    "module, which this python3 lacks): one answer could leave one for the next')\n"
    "    spec = external.spec_from_file_location(sys.argv[1], '/hutch-task/%s.py' % sys.argv[1])\n"
    "    mod = bootstrap.module_from_spec(spec)\n"
    "    spec.loader.exec_module(mod)\n"
    "except BaseException as e:\n"
    "    failed = e\n"
    "# reward.py that keeps a file or shared memory open from its import shares\n"
    "# it with every request: then each answer is the sandbox's last (a fresh\n"
    "# sandbox per task, as without sharing).\n"
    "alone = held() == held0\n"
    "state0, space0 = state(), space()\n"
    "stdin = sys.stdin.buffer\n"
    "while True:\n"
    "    head = stdin.readline().split()\n"
    "    if len(head) != 2:\n"
    "        os._exit(0)\n"
    "    secret, size = head[0], int(head[1])\n"
    "    data = stdin.read(size)\n"
    "    if len(data) != size:\n"
    "        os._exit(0)\n"
    "    r, w = os.pipe()\n"
    "    t0 = time.process_time()\n"
    "    sys.stderr.flush()\n"
    "    pid = os.fork()\n"
    "    if pid == 0:\n"
    "        # The request's own process: it holds neither the result's fd nor\n"
    "        # the requests' stream.\n"
    "        os.close(r)\n"
    "        os.close(result_fd)\n"
    "        # Its stdout and stderr on a file description of its own: flags it\n"
    "        # sets on them (O_ASYNC with F_SETOWN, O_NONBLOCK, the pipe's size)\n"
    "        # stay with it, not with the driver's.\n"
    "        e = os.open('/proc/self/fd/2', os.O_WRONLY)\n"
    "        os.dup2(e, 1)\n"
    "        os.dup2(e, 2)\n"
    "        os.close(e)\n"
    "        null = os.open('/dev/null', os.O_RDONLY)\n"
    "        os.dup2(null, 0)\n"
    "        os.close(null)\n"
    "        res = answer(data)\n"
    "        sys.stderr.flush()\n"
    "        write(w, b'\\n' + res)  # the last line: what code it ran wrote before is not it\n"
    "        os._exit(0)\n"
    "    os.close(w)\n"
    "    # Its result, read until it has ended (not until the pipe's end: a\n"
    "    # process it forked and left may hold the pipe open) or past 1 MiB.\n"
    "    import select\n"
    "    pfd = os.pidfd_open(pid)\n"
    "    os.set_blocking(r, False)\n"
    "    poll = select.poll()\n"
    "    poll.register(r, select.POLLIN)\n"
    "    poll.register(pfd, select.POLLIN)\n"
    "    res, ended = b'', False\n"
    "    while len(res) <= 1 << 20:\n"
    "        ready = dict(poll.poll())\n"
    "        ended = ended or pfd in ready\n"
    "        try:\n"
    "            b = os.read(r, 65536)\n"
    "        except BlockingIOError:\n"
    "            b = None\n"
    "        if b:\n"
    "            res += b\n"
    "        elif b == b'' or ended:\n"
    "            break\n"
    "    os.close(r)\n"
    "    os.close(pfd)\n"
    "    over, res = len(res) > 1 << 20, res.rsplit(b'\\n', 1)[-1]\n"
    "    _, status, ru = os.wait4(pid, 0)\n"
    "    clean, left = reset()\n"
    "    clean = clean and alone\n"
    "    if over or not res:\n"
    "        how = 'was killed by signal %d' % os.WTERMSIG(status) if os.WIFSIGNALED(status) else \\\n"
    "            'exited with status %d' % os.WEXITSTATUS(status)\n"
    "        res = error('ProcessError', 'the scoring process %s, with no result' % how)\n"
    "    # Its CPU time and what it left, and this process's own.\n"
    "    cpu = ru.ru_utime + ru.ru_stime + left + time.process_time() - t0\n"
    "    # \",last\": this sandbox ends after this answer (the runner starts another).\n"
    "    last = b'' if clean else b',last'\n"
    "    write(result_fd, b'\\n' + secret + b' cpu=%d%s ' % (int(cpu * 1e6), last) + res + b'\\n')\n"
    "    if not clean:\n"
    "        os._exit(0)\n";

static char *last_line(char *buf) {
  size_t n = strlen(buf);
  while (n > 0 && buf[n - 1] == '\n')
    buf[--n] = '\0';
  char *nl = strrchr(buf, '\n');
  return nl ? nl + 1 : buf;
}

/* The line that begins with the secret and a space, whole (its newline
 * seen), in buf from `from` on; NULL while there is none, *from then moved
 * to the start of the line not yet whole. */
static char *secret_line(char *buf, size_t *from, const char *secret) {
  size_t sl = strlen(secret);
  char *p = buf + *from;
  for (char *nl; (nl = strchr(p, '\n')) != NULL; p = nl + 1) {
    if (strncmp(p, secret, sl) == 0 && p[sl] == ' ') {
      *nl = '\0';
      return p + sl + 1;
    }
  }
  *from = (size_t)(p - buf);
  return NULL;
}

/* The newest bytes of a stream, at most cap, NUL-terminated in e. */
static void keep_tail(char *e, size_t cap, size_t *elen, const char *data, size_t n) {
  if (n >= cap) {
    memcpy(e, data + n - cap, cap);
    *elen = cap;
  } else {
    size_t keep = *elen + n > cap ? cap - n : *elen;
    memmove(e, e + *elen - keep, keep);
    memcpy(e + keep, data, n);
    *elen = keep + n;
  }
  e[*elen] = '\0';
}

char *bench_py_driver_dir(const char *out) {
  char *dir = xasprintf("%s/runs/.reward-driver", out);
  _cleanup_free_ char *path = xasprintf("%s/driver.py", dir);
  /* Made afresh (a resumed run's may be another version's), and put in
   * place by a rename: a second run on the same directory (a requeued job)
   * must not leave the first one's scoring sandboxes a missing or
   * half-written driver. */
  if (mkdir_p(dir, 0755) < 0 || write_file_atomic(path, driver_py, strlen(driver_py), 0644) < 0) {
    free(dir);
    return NULL;
  }
  return dir;
}

struct bench_py *bench_scorer;

static int py_start(struct bench_py *py, const struct bench_opts *o, const struct bench_set *set, const char *dir,
                    const char *module, const char *func, double wait, bool shared, char **why) {
  memset(py, 0, sizeof(*py));
  py->in = py->out = py->err = -1;
  py->shared = shared;
  *why = NULL;
  hutch_error_t err = NULL;
  /* The run's one driver directory (read-only in every scoring sandbox),
   * else one of this scoring's own. */
  if (o->driver_dir == NULL) {
    if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
      *why = hutch_errno_format(errno, "mkdir %s", dir);
      return -1;
    }
    _cleanup_free_ char *driver_path = xasprintf("%s/driver.py", dir);
    /* A scratch file of this scoring only: no fsync. */
    if (write_file_at(AT_FDCWD, driver_path, driver_py, strlen(driver_py), 0644) < 0) {
      *why = hutch_errno_format(errno, "write %s", dir);
      return -1;
    }
  }
  _cleanup_free_ char *bind_reward = xasprintf("--bind=%s:/hutch-reward:ro", o->driver_dir ? o->driver_dir : dir);
  _cleanup_free_ char *bind_task = xasprintf("--bind=%s:/hutch-task:ro", set->dir);
  /* hutch exec's own limit is a backstop; the time limit proper counts from
   * the args (bench_py_finish). */
  _cleanup_free_ char *timeout = xasprintf("--timeout=%g", wait + o->reward_timeout + PY_SLACK);
  /* A shared one lives as long as its runner (die-with-parent) and is
   * stopped by it: each request's limit is counted by its worker. */
  /* The scoring sandbox's audit log beside its directory, not in it: that
   * directory is bound into the sandbox. */
  _cleanup_free_ char *audit = xasprintf("--audit=%s.audit.jsonl", dir);
  /* Without --reward-memory, the policy's limits (memory, pids, disk), which
   * fall back to rlimits where cgroups cannot be used. */
  _cleanup_free_ char *memory = o->reward_memory ? xasprintf("--memory=%s", o->reward_memory) : NULL;
  _cleanup_free_ char *rootfs = o->reward_rootfs ? xasprintf("--rootfs=%s", o->reward_rootfs) : NULL;
  _cleanup_free_ char *store = o->s.store ? xasprintf("--store=%s", o->s.store) : NULL;
  _cleanup_free_ char *state = o->s.state_dir ? xasprintf("--state-dir=%s", o->s.state_dir) : NULL;
  _cleanup_free_ char *policy = o->s.policy ? xasprintf("--policy=%s", o->s.policy) : NULL;
  const char *argv[24];
  size_t n = 0;
  argv[n++] = o->hutch;
  argv[n++] = "exec";
  argv[n++] = "--net=none";
  /* Nothing a request writes outside /tmp and /dev/shm (which the driver
   * empties after each) can be there for the next one to load. */
  argv[n++] = "--read-only";
  argv[n++] = "--workdir=/hutch-reward";
  argv[n++] = "--env=HOME=/tmp";
  if (!shared)
    argv[n++] = timeout;
  argv[n++] = audit;
  argv[n++] = bind_reward;
  argv[n++] = bind_task;
  const char *opt[] = {rootfs, store, state, policy, memory, o->s.no_cgroups ? "--no-cgroups" : NULL};
  for (size_t i = 0; i < ARRAY_SIZE(opt); i++)
    if (opt[i])
      argv[n++] = opt[i];
  argv[n++] = "--";
  argv[n++] = "python3";
  argv[n++] = "-I";
  argv[n++] = "/hutch-reward/driver.py";
  argv[n++] = module;
  argv[n++] = func;
  argv[n] = NULL;

  int in[2], out[2], errp[2];
  in[0] = in[1] = out[0] = out[1] = errp[0] = errp[1] = -1;
  if (pipe2(in, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0 || pipe2(errp, O_CLOEXEC) < 0) {
    *why = hutch_errno_format(errno, "pipe");
    /* The runner starts scoring sandboxes all run long: none may leak. */
    int *all[] = {in, out, errp};
    for (size_t i = 0; i < ARRAY_SIZE(all); i++)
      for (int j = 0; j < 2; j++)
        if (all[i][j] >= 0)
          close(all[i][j]);
    return -1;
  }
  int r = bench_spawn_fds(&py->c, (char *const *)argv, in[0], out[1], errp[1], &err);
  close(in[0]), close(out[1]), close(errp[1]);
  py->in = in[1], py->out = out[0], py->err = errp[0];
  if (r < 0) {
    *why = hutch_error_format(err);
    hutch_error_free(&err);
    bench_py_end(py);
    return -1;
  }
  /* stderr: kept for the error's text, at most what the pipe holds; the
   * sandbox may write more, so it is read without blocking at the end. */
  fcntl(py->err, F_SETFL, O_NONBLOCK);
  /* A driver gone before its args are written is an error of its own, not
   * a signal that ends the worker. */
  signal(SIGPIPE, SIG_IGN);
  py->running = true;
  return 0;
}

int bench_py_start(struct bench_py *py, const struct bench_opts *o, const struct bench_set *set, const char *dir,
                   const char *module, const char *func, double wait, char **why) {
  return py_start(py, o, set, dir, module, func, wait, false, why);
}

int bench_py_start_shared(struct bench_py *py, const struct bench_opts *o, const struct bench_set *set, const char *dir,
                          char **why) {
  return py_start(py, o, set, dir, "reward", "score", 0, true, why);
}

/* A shared scoring sandbox that failed a request, or said the request was
 * its last, in a worker: no longer used, this process's copies of its
 * pipes closed.  The runner, its parent, stops it (the worker exits with
 * BENCH_EXIT_SCORER_STOPPED): only the parent knows whether its pid is
 * still its own and not reaped (and reused) already. */
static void shared_stop(struct bench_py *py) {
  py->running = false;
  bench_py_end(py);
}

bool bench_py_usable(struct bench_py *py) {
  if (py == NULL || !py->running)
    return false;
  struct pollfd p = {.fd = py->out, .events = POLLIN};
  if (poll(&p, 1, 0) == 0)
    return true;
  shared_stop(py); /* gone, or it wrote what nobody asked for */
  return false;
}

void bench_py_end(struct bench_py *py) {
  if (py->in >= 0)
    close(py->in); /* the driver reads the end of its input and exits */
  if (py->running && !py->shared)
    bench_wait(&py->c, 30, 10, -1, NULL, 0);
  if (py->out >= 0)
    close(py->out);
  if (py->err >= 0)
    close(py->err);
  py->in = py->out = py->err = -1;
  py->running = false;
}

/* Gives the driver its input and reads its stdout until its result line,
 * its end or `until`, all without blocking: its stderr is drained
 * meanwhile (the newest of it kept in ebuf for an error's text), since a
 * driver or reward.py's child blocked on a full pipe would never answer,
 * and a driver that never reads its input holds the runner no longer than
 * the time limit. */
static char *exchange(struct bench_py *py, const char *input, size_t in_len, double until, size_t cap, char **buf,
                      char *ebuf, size_t ebuf_cap, bool *timed_out) {
  size_t len = 0, from = 0, in_off = 0, elen = 0;
  *buf = xstrdup("");
  ebuf[0] = '\0';
  /* A shared one's stderr may still hold the end of an earlier task's:
   * not this one's to report. */
  char stale[4096];
  for (int i = 0; i < 64 && py->shared && py->err >= 0 && read(py->err, stale, sizeof(stale)) > 0; i++)
    ;
  fcntl(py->in, F_SETFL, O_NONBLOCK);
  fcntl(py->out, F_SETFL, O_NONBLOCK);
  for (;;) {
    if (py->in >= 0 && in_off == in_len && !py->shared) {
      close(py->in); /* the end of its input */
      py->in = -1;
    }
    char *line = secret_line(*buf, &from, py->secret);
    if (line)
      return line;
    double left = until - monotonic_seconds();
    if (left <= 0 || bench_stop) {
      *timed_out = !bench_stop;
      return NULL;
    }
    struct pollfd p[3] = {{.fd = py->out, .events = POLLIN},
                          {.fd = py->err, .events = POLLIN},
                          {.fd = in_off < in_len ? py->in : -1, .events = POLLOUT}};
    if (poll(p, 3, (int)(left * 1000) + 1) <= 0)
      continue;
    char tmp[65536];
    if (p[2].revents) {
      ssize_t w = write(py->in, input + in_off, in_len - in_off);
      if (w > 0)
        in_off += (size_t)w;
      else if (w < 0 && errno != EAGAIN && errno != EINTR)
        in_off = in_len; /* it is gone: its end is read below */
    }
    if (p[1].revents) {
      ssize_t n = read(py->err, tmp, sizeof(tmp));
      if (n > 0)
        keep_tail(ebuf, ebuf_cap - 1, &elen, tmp, (size_t)n);
      else if (n == 0) {
        close(py->err);
        py->err = -1;
      }
    }
    if (!p[0].revents)
      continue;
    ssize_t n = read(py->out, tmp, sizeof(tmp));
    if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN))
      return NULL; /* the driver and everything it started are gone */
    if (n < 0)
      continue;
    /* Past cap, only the newest cap bytes are kept: the result line comes
     * last, and whatever printed before it cannot push it out. */
    *buf = xrealloc(*buf, len + (size_t)n + 1);
    memcpy(*buf + len, tmp, (size_t)n);
    len += (size_t)n;
    (*buf)[len] = '\0';
    if (len > cap) {
      memmove(*buf, *buf + len - cap, cap + 1);
      from = from > len - cap ? from - (len - cap) : 0;
      len = cap;
    }
  }
}

int bench_py_finish(struct bench_py *py, const struct bench_opts *o, const cJSON *args, size_t cap, cJSON **result,
                    char **why) {
  *result = NULL;
  *why = NULL;
  /* The secret is made only now, after the task's agent has ended: a
   * scoring started ahead of the agent must not have it in memory when the
   * agent (a fork of this process) and its sandbox's init are forked. */
  unsigned char rnd[16];
  if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd)) {
    *why = hutch_errno_format(errno, "getrandom");
    return -1;
  }
  for (size_t i = 0; i < sizeof(rnd); i++)
    snprintf(py->secret + 2 * i, 3, "%02x", rnd[i]);
  explicit_bzero(rnd, sizeof(rnd));
  size_t alen, sl = strlen(py->secret);
  _cleanup_free_ char *data = bench_py_marshal(args, &alen);
  if (data == NULL) {
    *why = xstrdup("a string of the task is too large for the driver");
    return -1;
  }
  /* A request: "SECRET SIZE\n", then SIZE bytes of marshal data. */
  char head[64];
  int hl = snprintf(head, sizeof(head), "%s %zu\n", py->secret, alen);
  _cleanup_free_ char *input = xmalloc((size_t)hl + alen);
  memcpy(input, head, (size_t)hl);
  memcpy(input + hl, data, alen);
  _cleanup_free_ char *buf = NULL;
  char ebuf[2048];
  bool timed_out = false;
  py->cpu = 0;
  char *line = exchange(py, input, (size_t)hl + alen, monotonic_seconds() + o->reward_timeout, cap + sl + 32, &buf,
                        ebuf, sizeof(ebuf), &timed_out);
  bool last = false;
  int64_t cpu_us = 0;
  const char *res = line ? bench_py_result_head(line, &cpu_us, &last) : NULL;
  if (res)
    py->cpu = (double)cpu_us / 1e6;
  if (res && (*result = bench_py_result(res)) != NULL) {
    /* Its last: left now, so that the runner starts the slot's next task
     * with a new one (BENCH_EXIT_SCORER_STOPPED). */
    if (last && py->shared)
      shared_stop(py);
    return 0;
  }
  if (bench_stop) {
    *why = xstrdup("stopped");
    return -1;
  }
  if (py->shared) {
    shared_stop(py);
    if (timed_out)
      *why = xasprintf("took longer than %g s", o->reward_timeout);
    else
      *why = xasprintf("the scoring sandbox ended with no result%s%s", ebuf[0] ? ": " : "", last_line(ebuf));
    return -1;
  }
  /* hutch exec removes the sandbox on SIGTERM. */
  if (timed_out)
    kill(py->c.pid, SIGTERM);
  bench_wait(&py->c, 30, 10, -1, NULL, 0);
  py->running = false;
  /* What it wrote last, before it exited. */
  char tmp[2048];
  ssize_t en = py->err >= 0 ? read(py->err, tmp, sizeof(tmp)) : 0;
  size_t elen = strlen(ebuf);
  if (en > 0)
    keep_tail(ebuf, sizeof(ebuf) - 1, &elen, tmp, (size_t)en);
  bench_py_end(py);
  int code = WIFEXITED(py->c.status) ? WEXITSTATUS(py->c.status) : 128 + WTERMSIG(py->c.status);
  if (timed_out || code == 124 || py->c.timed_out)
    *why = xasprintf("took longer than %g s", o->reward_timeout);
  else if (code == 127)
    *why = xasprintf("python3 is not in the image (%s): choose one with --reward-rootfs",
                     o->reward_rootfs ? o->reward_rootfs : "the default");
  else if (code == 0)
    *why = xstrdup("the driver gave no result (a result is one line, marked as the driver's)");
  else
    *why = xasprintf("hutch exec exited with status %d%s%s", code, ebuf[0] ? ": " : "", last_line(ebuf));
  return -1;
}

int bench_python(const struct bench_opts *o, const struct bench_set *set, const char *dir, const char *module,
                 const char *func, const cJSON *args, size_t cap, cJSON **result, char **why) {
  struct bench_py py;
  if (bench_py_start(&py, o, set, dir, module, func, 0, why) < 0)
    return -1;
  int r = bench_py_finish(&py, o, args, cap, result, why);
  bench_py_end(&py);
  return r;
}

cJSON *bench_score_args(const char *answer, const cJSON *row) {
  cJSON *args = cJSON_CreateObject();
  cJSON_AddStringToObject(args, "answer", answer);
  const cJSON *gt = cJSON_GetObjectItemCaseSensitive(row, "ground_truth");
  cJSON_AddItemToObject(args, "ground_truth", gt ? cJSON_Duplicate(gt, true) : cJSON_CreateNull());
  cJSON *kw = cJSON_Duplicate(row, true);
  cJSON_DeleteItemFromObjectCaseSensitive(kw, "ground_truth");
  cJSON_AddItemToObject(args, "kwargs", kw);
  return args;
}

int bench_score_finish(struct bench_py *py, const struct bench_opts *o, const char *answer, const cJSON *row,
                       double *score, char **why, char **kind) {
  *why = NULL;
  if (kind)
    *kind = NULL;
  cJSON *args = bench_score_args(answer, row);
  cJSON *res = NULL;
  _cleanup_free_ char *fail = NULL;
  int r = bench_py_finish(py, o, args, REWARD_OUT_MAX, &res, &fail);
  cJSON_Delete(args);
  if (r < 0) {
    if (strncmp(fail, "took longer", 11) == 0)
      *why = xasprintf("reward: compute_score took longer than %g s", o->reward_timeout);
    else
      *why = xasprintf("reward: %s", fail);
    return -1;
  }
  const cJSON *s = cJSON_GetObjectItemCaseSensitive(res, "score");
  const cJSON *e = cJSON_GetObjectItemCaseSensitive(res, "error");
  const cJSON *k = cJSON_GetObjectItemCaseSensitive(res, "kind");
  r = -1;
  if (cJSON_IsNumber(s) && isfinite(s->valuedouble)) {
    *score = s->valuedouble;
    r = 0;
  } else {
    *why = xasprintf("reward: %s", cJSON_IsString(e) ? e->valuestring : "the driver said nothing");
    if (kind && cJSON_IsString(k))
      *kind = xstrdup(k->valuestring);
  }
  cJSON_Delete(res);
  return r;
}

int bench_score(const struct bench_opts *o, const struct bench_set *set, const char *dir, const char *answer,
                const cJSON *row, double *score, char **why, char **kind) {
  struct bench_py py;
  if (bench_py_start(&py, o, set, dir, "reward", "score", 0, why) < 0) {
    char *fail = *why;
    *why = xasprintf("reward: %s", fail);
    free(fail);
    if (kind)
      *kind = NULL;
    return -1;
  }
  int r = bench_score_finish(&py, o, answer, row, score, why, kind);
  bench_py_end(&py);
  return r;
}
