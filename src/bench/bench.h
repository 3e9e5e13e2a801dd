/* SPDX-License-Identifier: Apache-2.0 */
/* hutch benchmark: LLM-in-Sandbox 0.2.0's task folders, one hutch run per
 * task in a sandbox of its own, each answer scored by the task's reward.py
 * in another sandbox (the answer is untrusted: it is data, never code). */
#ifndef HUTCH_BENCH_H
#define HUTCH_BENCH_H

#include <cjson/cJSON.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "hutch.h"
#include "settings.h"

/* A task set's score range: config.yaml's hutch_score_min and
 * hutch_score_max ([0, 1] by default, LLM-in-Sandbox's format having none).
 * A score outside it is the task's scoring error, never averaged. */
struct bench_range {
  double min, max;
};

/* A task folder as LLM-in-Sandbox reads it (config.yaml, the data file,
 * reward.py). */
struct bench_set {
  char *name; /* --task NAME */
  char *dir;  /* TASKDIR/NAME, absolute */
  char *data; /* the data file, resolved against TASKDIR */
  char *system_prompt;
  char *instance_prompt;
  /* The sandbox's directories: LLM-in-Sandbox's benchmark defaults (its
   * runner does not read them from config.yaml), or a legacy
   * prompt_config file's. */
  char *working_dir, *input_dir, *output_dir;
  cJSON *rows;     /* array of objects, each with a string "id" */
  bool has_reward; /* reward.py is there (tasks with a verifier need none) */
  struct bench_range range;
};

/* -1 with *err on failure, BENCH_SET_MISSING when the task folder, its
 * config.yaml or its data file is not there (a mistake of the command
 * line's, which bench_task_list helps to mend). */
#define BENCH_SET_MISSING (-2)
int bench_set_load(const char *taskdir, const char *name, struct bench_set *set, hutch_error_t *err);
/* "the tasks in TASKDIR: a, b, c" (sorted, at most BENCH_TASK_LIST_MAX
 * named), or what is wrong with TASKDIR; malloc'd. */
#define BENCH_TASK_LIST_MAX 40
char *bench_task_list(const char *taskdir);
void bench_set_free(struct bench_set *set);
/* The rows' data as LLM-in-Sandbox's `datasets` json loader takes it: a
 * JSON array, or JSON lines. */
cJSON *bench_parse_rows(const char *text, size_t len, hutch_error_t *err);
/* id as a file name: '/', NUL and leading dots replaced by '_'. */
char *bench_safe_name(const char *id);

/* How a task ended, in its results.jsonl line ("end").  The first four are
 * measured: the task ran as the model made it (finished: scored; timeout:
 * its time limit; task_error: the task or the model's answer could not be
 * used; scoring_error: reward.py or the verifier failed) and its score
 * counts.  The last two are not: the model's API or hutch failed, the task
 * is not finished, and --resume runs it again. */
enum bench_end {
  BENCH_END_FINISHED,
  BENCH_END_TIMEOUT,
  BENCH_END_TASK,
  BENCH_END_SCORING,
  BENCH_END_API,
  BENCH_END_INFRA,
  BENCH_END_N
};
extern const char *const bench_end_names[BENCH_END_N];
/* A line's end: its "end", else (a line of an older hutch) what its error
 * and exit_code say; -1 for an "end" of no known name. */
int bench_line_end(const cJSON *line);
static inline bool bench_end_measured(int end) {
  return end >= 0 && end <= BENCH_END_SCORING;
}

/* What a run, or a merge, measured: benchmark.json's "status" and
 * summary.md's head.  A run is complete when each of its tasks has a
 * measured end; only then do results.json and trajectory.json (LLM-in-
 * Sandbox's files, which its readers take for a whole run) exist, unless
 * a merge is told --allow-partial. */
struct bench_status {
  bool complete;
  const char *stopped; /* why the run stopped early, NULL */
  long tasks;          /* the run's tasks (a merge's: the shards' given) */
  long ends[BENCH_END_N];
  long not_run;
  /* A merge's: the shards not given, and those given unfinished (their
   * numbers, the first BENCH_SHARDS_LISTED; and their counts), of shards;
   * partial: merged all the same (--allow-partial). */
  const cJSON *missing_shards, *incomplete_shards;
  long missing, incomplete, shards;
  bool partial;
};
#define BENCH_SHARDS_LISTED 1000

/* What a run's tasks add up to, for the terminal (progress_text.c). */
struct bench_totals {
  size_t done, measured;
  double sum; /* of the measured scores */
  int errors;
  long steps;
  double tokens_in, tokens_out, tokens_unsplit; /* unsplit: lines with a total only */
  double model_seconds, tool_seconds;           /* summed over tasks */
};
void bench_totals_add(struct bench_totals *t, const cJSON *line);
/* "[3/20] ID  score 1.0000  4 steps  1234 tokens  2.10 s", with the end's
 * kind and error where it was not a plain finish; escaped, one line. */
char *bench_task_line(size_t done, size_t total, const cJSON *line);
/* The task's --json event. */
cJSON *bench_task_event(size_t done, size_t total, const cJSON *line);
/* "[####......] 5/20  2 running  mean 0.600  1 error  1m05s", at most
 * width - 1 characters (width 0: no bound). */
char *bench_live_line(const struct bench_totals *t, size_t total, size_t running, double elapsed, size_t width);
/* "totals over 20 tasks: 80 steps, 56.7k tokens (50000 in, 6700 out),
 * model 40.1 s, tools 12.0 s" */
char *bench_totals_line(const struct bench_totals *t);
/* The runner's terminal (progress.c), the one sink of its messages. */
/* The --json events' schema, in the start event. */
#define BENCH_JSON_SCHEMA 1
enum bench_term_mode { BENCH_TERM_LINES, BENCH_TERM_QUIET, BENCH_TERM_JSON };
void bench_term_init(enum bench_term_mode mode);
enum bench_term_mode bench_term_mode(void);
/* Around the runner's wait for a worker: a second's alarm, which ends the
 * wait (EINTR) so that the live line is redrawn; nothing where there is no
 * live line. */
void bench_term_arm(void);
void bench_term_disarm(void);
/* The live line off the screen, before anything else writes to stderr. */
void bench_term_clear(void);
/* A line of progress (lines mode only), as printf formats it. */
void bench_term_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* With --json, the event on a line of stdout; taken. */
void bench_term_event(cJSON *event);
/* A task ended: its line, or its event. */
void bench_term_task(size_t done, size_t total, const cJSON *line);
/* The live line, at a terminal. */
void bench_term_live(const struct bench_totals *t, size_t total, size_t running, double elapsed);
/* The --json end event: the status, the totals, the exit status. */
cJSON *bench_end_event(const struct bench_totals *t, const struct bench_status *st, double elapsed, int exit_code,
                       const char *out);
/* The status as benchmark.json's "status" object. */
cJSON *bench_status_json(const struct bench_status *st);
/* The run's status from its lines (those kept of results.jsonl and those
 * of this run) and its count of tasks. */
void bench_status_count(struct bench_status *st, const cJSON *lines, long tasks);

struct bench_opts {
  char *taskdir, *task, *mode;
  long num_workers, start_id, end_id, max_response_len; /* -1: unset */
  long max_inflight;                                    /* the shared LLM client's cap (llm_gate.h) */
  char *output_dir, *resume;
  double task_timeout;
  char *shard;           /* --shard K/N as given */
  long shards;           /* --shards N (Kubernetes), 0 when not given */
  long shard_k, shard_n; /* resolved: shard K of N */
  char *reward_rootfs, *reward_memory;
  double reward_timeout;
  const char *hutch; /* the hutch binary */
  /* The scoring driver's directory, written once per run and bound
   * read-only into every scoring sandbox; NULL: each scoring writes its own
   * into its directory. */
  char *driver_dir;
  /* The tasks' prompt config (the task set's prompts), written once per
   * run; NULL: each task writes its own. */
  char *prompt_path;
  /* --lis: the installed LLM-in-Sandbox's tool schemas (JSON), and the
   * file of the run directory that holds them for the tasks. */
  char *lis, *lis_tools, *lis_tools_path;
  char **agent_argv; /* options passed to every hutch run */
  size_t n_agent;
  /* hutch benchmark's own options as given, "--name=value"; and all the
   * options a new run records in benchmark.json for its --resume
   * (resume_opts.h), once they are resolved. */
  char **own_given, **record;
  size_t n_own_given, n_record;
  struct settings s;     /* those options as hutch run resolves them */
  long max_api_failures; /* tasks in a row ended on an API or hutch failure that stop the run; 0: never */
  double wait_endpoint;  /* --wait-for-endpoint, seconds; 0: no wait */
  bool retry_errors;     /* --retry-errors: --resume runs the tasks that ended in errors too */
  bool quiet, json;      /* the runner's terminal (progress.c); not passed to the tasks */
  /* The run's status when its files are written (bench_write_outputs):
   * results.json and trajectory.json only when complete or partial. */
  const struct bench_status *status;
};

/* The pre-flight (preflight.c): one request to the model's API before any
 * task, GET {base}/models (and a completion of one token only when that
 * cannot tell), retried as a task's request would be, or for up to
 * o->wait_endpoint seconds; -1 with err when it does not answer, refuses
 * the key or does not serve the model. */
int bench_preflight(const struct bench_opts *o, hutch_error_t *err);

/* The most shards a run may be cut into (--shard, Slurm's array, --shards;
 * merge reads the count from a file). */
#define BENCH_SHARDS_MAX (1L << 20)

/* The shard K of N to run (0 of 1: all), from --shard K/N, else Slurm's
 * job array variables, else JOB_COMPLETION_INDEX with --shards N (shards
 * 0: not given); -1 with *why. */
int bench_shard(const char *opt, long shards, const char *slurm_id, const char *slurm_min, const char *slurm_count,
                const char *job_index, long *k, long *n, char **why);

/* A task's "hutch" object: hutch run options (--rootfs, --memory, --disk,
 * --cpus, --pids, --net proxy with --allow, --verify), its wall-clock
 * limit (0: --task-timeout) and verifier. */
struct bench_task_opts {
  char **args; /* NULL-terminated */
  size_t n_args;
  double timeout;
  char *verifier;
};
int bench_task_opts(const cJSON *row, struct bench_task_opts *t, char **why);
void bench_task_opts_free(struct bench_task_opts *t);
/* The score of a verifier's record (trajectory.json's hutch.verifier): the
 * number on its last line, else 1.0 for exit status 0 and 0.0 otherwise;
 * -1 with *why when it failed to run or timed out. */
int bench_verifier_score(const cJSON *verifier, double *score, char **why);

/* One task, in a forked worker: files in, hutch run, answer, score; writes
 * RUN/runs/SAFE/result.json (the results.jsonl line) unless stopped. */
int bench_run_task(const struct bench_opts *o, const struct bench_set *set, const cJSON *row, const char *out);

/* --mode llm: one completion of the task's prompt (vanilla_llm_prompt.py's,
 * else the problem statement); 0 with *answer (the reply's content), else
 * -1 with *why (*end: BENCH_END_API when the request failed, *fatal: the
 * API refused the key).  Progress to log. */
int bench_vanilla(const struct bench_opts *o, const struct bench_set *set, const cJSON *row, const char *dir, FILE *log,
                  char **answer, char **why, bool *fatal, int *end);

/* compute_score(answer, ground_truth, **row) in a sandbox of its own:
 * 0 with *score (*repr: Python's repr of what compute_score returned, a
 * float's, an int's or a bool's, which LLM-in-Sandbox's files keep; NULL:
 * not wanted), or -1 with *why (the task's error; *kind: the Python
 * exception's class name when the driver could say it). */
int bench_score(const struct bench_opts *o, const struct bench_set *set, const char *dir, const char *answer,
                const cJSON *row, double *score, char **why, char **kind, char **repr);

/* Children: started with stdin, stdout and stderr from the given fds
 * (-1: /dev/null); waited for until deadline
 * (seconds, 0: none) or *stop, then SIGTERM, and SIGKILL after grace. */
struct bench_child {
  pid_t pid;
  int status;
  bool timed_out, stopped;
  /* A task's agent, a child of the agent spawner: its pidfd and the
   * channel its end comes on (spawner.c). */
  bool remote;
  int pidfd, chan;
  /* Once it has ended: its CPU time (user + system, in s), its reaped
   * descendants' included. */
  double cpu;
};
struct rusage;
/* A wait4() rusage's user + system time, in us. */
int64_t bench_rusage_us(const struct rusage *ru);
/* A task's agent: hutch-agent's agent_main(argv) in a child of the agent
 * spawner, with no exec, stdin from in, stdout and stderr to out and
 * errfd (-1: /dev/null); the child gets the signal state and fds (0, 1, 2
 * only) a fresh program would, and _exit()s with the agent's status. */
int bench_spawn_agent(struct bench_child *c, char *argv[], int in, int out, int errfd, hutch_error_t *err);
/* The agent's child itself, forked by the spawner: set up as a fresh
 * program would be (envp: its environment, *mask: its signal mask), it
 * runs agent_main(argv) and _exit()s with its status; the pid, or -1 with
 * errno. */
pid_t bench_fork_agent(char *argv[], char *envp[], int in, int out, int errfd, const sigset_t *mask);
/* The agent spawner (spawner.c): forked by the runner before it reads the
 * task set, so that no agent holds a row, answer, result or secret of the
 * run.  Workers inherit its socket. */
extern int bench_spawner_fd;
int bench_spawner_start(hutch_error_t *err);
void bench_spawner_stop(void);
/* true when pid (which the caller has reaped) was the spawner. */
bool bench_spawner_is(pid_t pid);
/* Set in a worker once the spawner is found gone: its task did not run to
 * its end, and the worker exits with BENCH_EXIT_NO_SPAWNER and no result
 * (the runner stops the run; --resume runs the task). */
extern bool bench_spawner_lost;
#define BENCH_EXIT_NO_SPAWNER 75
/* A worker that stopped its slot's scoring sandbox (a failed request, or
 * one the driver said was its last): its result is written; the runner
 * starts a new one for the slot's next task, which would otherwise find the
 * old one still answering for a moment, and then gone mid-request. */
#define BENCH_EXIT_SCORER_STOPPED 76
int bench_spawner_request(struct bench_child *c, char *const argv[], const int stdio[3], hutch_error_t *err);
/* 1 with c->status once the spawner said the agent has ended, else 0. */
int bench_spawner_ended(struct bench_child *c);
/* sig to the child (through its pidfd when there is one). */
void bench_child_signal(const struct bench_child *c, int sig);
/* A program (argv[0]) with stdin from an fd (-1: /dev/null). */
int bench_spawn_fds(struct bench_child *c, char *const argv[], int in, int out, int errfd, hutch_error_t *err);
/* The task set's prompts as a prompt config for hutch run, at path. */
int bench_write_prompt(const struct bench_set *set, const char *path);
/* OUT/runs/.reward-driver with the scoring driver (driver.py), for
 * bench_opts.driver_dir; NULL when it cannot be written. */
char *bench_py_driver_dir(const char *out);
/* capture: a pipe read end drained meanwhile into *buf, at most cap bytes
 * kept (the rest read and dropped); -1 for none. */
int bench_wait(struct bench_child *c, double timeout, double grace, int capture, char **buf, size_t cap);

/* Task-set Python (reward.py, vanilla_llm_prompt.py) in a sandbox, started
 * ahead of its input: python3 -I runs a fixed driver that loads the task
 * folder's module (read-only at /hutch-task) and then answers requests on
 * its stdin, each a secret of its own and the args (marshal data).  Each
 * result comes back as one line on a channel the code it runs cannot
 * reach, marked with that secret: whatever else writes to its stdout
 * cannot pass for it. */
struct bench_py {
  struct bench_child c;
  int in, out, err; /* the driver's stdin (written), stdout and stderr (read) */
  char secret[33];
  bool running;
  /* A worker slot's scoring sandbox, the runner's child, which scores one
   * task after another (bench_py_start_shared); a worker uses it, and on a
   * failure stops it for the runner to start again. */
  bool shared;
  double cpu; /* the last request's CPU time (s), as the driver counted it */
};
/* The slot's scoring sandbox in a worker, NULL: none (each task starts its
 * own). */
extern struct bench_py *bench_scorer;
/* The same driver in a sandbox that answers one request after another
 * (read-only root, no time limit of its own): started by the runner for a
 * worker slot.  dir: a path for its audit log (dir.audit.jsonl). */
int bench_py_start_shared(struct bench_py *py, const struct bench_opts *o, const struct bench_set *set, const char *dir,
                          char **why);
/* Whether a shared scoring sandbox can take a request: running, with
 * nothing unread and no end on its stdout; one that cannot is stopped. */
bool bench_py_usable(struct bench_py *py);
/* Starts the sandbox; `wait`: seconds it may wait for its args (the time
 * limit counts from then on). */
int bench_py_start(struct bench_py *py, const struct bench_opts *o, const struct bench_set *set, const char *dir,
                   const char *module, const char *func, double wait, char **why);
/* Sends args and waits (o->reward_timeout) for the driver's result. */
int bench_py_finish(struct bench_py *py, const struct bench_opts *o, const cJSON *args, size_t cap, cJSON **result,
                    char **why);
/* Ends it (its input closed: the driver exits) and waits for the
 * sandbox's removal; a shared one (a worker's copy) is only closed.  Safe
 * to call twice and on one never started. */
void bench_py_end(struct bench_py *py);
/* The args of compute_score for an answer. */
cJSON *bench_score_args(const char *answer, const cJSON *row);
/* The score from a finished reward driver (bench_score's contract). */
int bench_score_finish(struct bench_py *py, const struct bench_opts *o, const char *answer, const cJSON *row,
                       double *score, char **why, char **kind, char **repr);

/* Python's marshal bytes of a JSON value (the driver's args: marshal.loads
 * builds values and runs nothing); NULL for a string marshal cannot hold. */
char *bench_py_marshal(const cJSON *v, size_t *len);
/* A number of a parsed row keeps its text in its valuestring (NULL in a
 * cJSON number): cJSON holds a double, so 3 and 3.0 became one and an
 * integer past 2^53 lost digits, which Python's json.loads keeps apart and
 * exact.  text: what v was parsed from; -1 for an integer of more than 4300
 * digits, which json.loads refuses, and for a string holding a NUL, which
 * the C side would cut short. */
int bench_json_keep_numbers(cJSON *v, const char *text, size_t len, hutch_error_t *err);
/* Every object in v with a repeated key made as json.loads makes it: one
 * member, the last value in the first one's place (after
 * bench_json_keep_numbers, which goes by the text's order). */
void bench_json_last_wins(cJSON *v);
/* The head of the driver's result line (after its secret):
 * "cpu=USEC[,last] ", the request's CPU time and whether the sandbox ends
 * after it.  Returns what follows it, NULL when the line has no such head. */
const char *bench_py_result_head(const char *line, int64_t *cpu_us, bool *last);
/* A score's repr as the driver writes it: a float's, an int's, True or
 * False (at most 400 characters: an int past that is no finite float),
 * finite; its value in *v. */
bool bench_score_repr(const char *t, double *v);
/* The driver's result line (after its head) as {"score", "repr"},
 * {"error", "kind"} or {"prompt"}; NULL when it is not one. */
cJSON *bench_py_result(const char *line);

/* MODULE.py of the task folder in a sandbox (bench_py_start), FUNC "score"
 * (compute_score) or "prompt" (create_prompt) called with args; *result:
 * the driver's result (at most cap bytes read), else -1 with *why. */
int bench_python(const struct bench_opts *o, const struct bench_set *set, const char *dir, const char *module,
                 const char *func, const cJSON *args, size_t cap, cJSON **result, char **why);

/* Set by the signal handlers of the runner and of each worker. */
extern volatile sig_atomic_t bench_stop;

/* results.jsonl: one line per finished task, appended whole and fsync()ed. */
int bench_append_line(const char *path, const cJSON *line, hutch_error_t *err);
/* The finished tasks of DIR/results.jsonl (a torn last line is skipped).
 * Each line is checked (bench_line_check against r and shard_dirs, its
 * run_dir opened, bench_open_run_dir); one that fails, and a second line of
 * an id, is left out and appended to refused as {"line": N, "why", "text"}.
 * NULL with errno when there is a results.jsonl that cannot be read (a
 * symlink, larger than 4 GiB, ...). */
cJSON *bench_read_lines(const char *dir, const struct bench_range *r, const cJSON *shard_dirs, cJSON *refused);
/* resume.c: the finished tasks among rows (the run's tasks), *lines: the
 * lines of OUT/results.jsonl that are theirs, each once and checked, with
 * done[i] for rows[i]; every other line is said on stderr and kept in
 * OUT/results.refused.jsonl, and results.jsonl rewritten with those kept.
 * A line whose task did not finish (bench_end_measured), or ended in an
 * error when retry_errors, is moved to OUT/results.retried.jsonl: its task
 * runs again. */
int bench_resume_lines(const char *out, const struct bench_set *set, const cJSON *merged_from, const cJSON **rows,
                       size_t n_rows, bool retry_errors, bool *done, cJSON **lines, hutch_error_t *err);
/* The directory of a line's hutch run: its run_dir beneath its shard_dir
 * (a merged run's line), else beneath out, opened O_PATH with no symlink on
 * the way (openat2 RESOLVE_BENEATH); -1 with errno (ENOENT: it has none). */
int bench_open_run_dir(const char *out, const cJSON *line);

/* ---- runfiles.c: what is read back from run directories, checked (pure) ---- */
/* v as Python's repr writes it: the shortest text that reads back as v. */
void bench_fmt_double(char buf[32], double v);
/* NULL when score is a finite number in r, else why not, naming the value
 * ("1e+300, outside the task set's score range [0, 1]"). */
char *bench_score_outside(double score, const struct bench_range *r);
/* Whether name can be a task folder's: not empty, no '/', no leading '.'. */
bool bench_task_name_ok(const char *name);
/* benchmark.json: the fields its readers use, each of its type and range. */
struct bench_meta {
  const char *taskdir, *task, *mode, *llm_name;
  const cJSON *config, *merged_from; /* merged_from: NULL but in a merged run */
  long shard_k, shard_n;
  struct bench_range range; /* "score_range", [0, 1] when absent */
  /* "status": has_status false when absent (an older hutch's run, or one
   * killed before it began); complete, and the run's count of tasks. */
  bool has_status, complete;
  long tasks;
};
/* 0 with *m (pointing into meta), else -1 with *why naming the field. */
int bench_meta_check(const cJSON *meta, struct bench_meta *m, char **why);
/* A results.jsonl line: id, score (finite; in r, or 0 with an error),
 * error, end (a known one: finished without an error, any other with
 * one), lis_error, reward_repr (in r unless lis_error), elapsed_seconds,
 * tokens, timings, run_dir (bench_run_dir_ok) and
 * shard_dir (one of shard_dirs, a merged run's merged_from); -1 with *why
 * naming the field. */
int bench_line_check(const cJSON *line, const struct bench_range *r, const cJSON *shard_dirs, char **why);
/* Whether rd is a run_dir as the worker writes it: runs/ID/RUN, relative,
 * no empty component and none beginning with '.'. */
bool bench_run_dir_ok(const char *rd);
/* markdown.c: text as a Markdown code span for summary.md (pure): nothing
 * of it live (no link, image, emphasis, HTML, entity), on one line, at most
 * max characters then "..."; in_table: '|' escaped for a table's cell. */
char *bench_md_code(const char *text, size_t max, bool in_table);
/* summary.c: summary.md, the run at a glance for people (bench_md_code
 * for every text a task, model or run file wrote); st: its status. */
int bench_write_summary(const char *out, const char *task, const cJSON *config, const cJSON *lines,
                        const struct bench_status *st, double elapsed, hutch_error_t *err);
/* reward_driver.c: the scoring driver's Python source. */
extern const char bench_driver_py[];
/* results.json and trajectory.json as LLM-in-Sandbox writes them
 * (bench_write_lis, meta: benchmark.json), and hutch's summary.md and
 * report.html. */
int bench_write_outputs(const char *out, const struct bench_opts *o, const cJSON *meta, const cJSON *lines,
                        double elapsed, hutch_error_t *err);

/* ---- LLM-in-Sandbox's own files, as its benchmark runner writes them ---- */
/* pyjson.c (pure): v as Python's json.dump(v, f, indent=2,
 * ensure_ascii=False) writes it; a number prints from its valuestring when
 * it has one (its exact text), else as an int when integral, else as a
 * float. */
char *bench_pyjson(const cJSON *v);
/* A number that prints as Python's repr of the float v (1.0, 1e-05, NaN). */
cJSON *bench_pyjson_float(double v);
void bench_py_float_repr(char buf[40], double v);
/* lislog.c (pure): the console log LLM-in-Sandbox's agent prints for a run
 * (rich's panels and rules, 100 cells wide): the prompts, each step of
 * steps (trajectory.json's), and when trailing, the rule of the step whose
 * model call failed.  rich_tables.c holds rich's data it needs. */
char *bench_lislog(const char *system, const char *user, const cJSON *steps, long max_steps, bool trailing);
int bench_lislog_cell(uint32_t cp);
struct lislog_width {
  uint32_t first, last;
  int width;
};
struct lislog_emoji {
  const char *name, *text;
};
extern const struct lislog_width lislog_widths[];
extern const size_t lislog_n_widths;
extern const struct lislog_emoji lislog_emoji[];
extern const size_t lislog_n_emoji;
/* lisfiles.c: a results.jsonl line as LLM-in-Sandbox records the task:
 * its error (NULL: none; a model API that failed is none), its reward (a
 * float, int or bool node) and whether it keeps the answer and steps. */
const char *bench_lis_error(const cJSON *line);
cJSON *bench_lis_reward(const cJSON *line);
/* results.json's config as LLM-in-Sandbox types it, from benchmark.json. */
cJSON *bench_lis_config(const cJSON *meta);
/* trajectory.json and results.json, written as LLM-in-Sandbox's runner
 * writes them. */
int bench_write_lis(const char *out, const char *task, const cJSON *meta, const cJSON *lines,
                    const struct bench_status *st, double elapsed, hutch_error_t *err);
/* The steps of a line's run, from its own trajectory.json (hutch's keys
 * and all); an empty array without one. */
cJSON *bench_line_steps(const char *out, const cJSON *line);
/* Python's f"{v:.4f}" of a reward node. */
char *bench_lis_score4(const cJSON *reward);
/* A line's LIS error text for an error of hutch's (why) and the scoring
 * exception's class (kind): str(e) when why is "reward: KIND: str(e)". */
char *bench_lis_error_text(const char *why, const char *kind);
/* A reward's repr as the driver gave it, checked: True, False, an int or a
 * float; NULL when it is none of these. */
cJSON *bench_lis_reward_node(const char *repr);

/* OUT/NAME written atomically with text (len bytes), which it frees. */
int bench_save(const char *out, const char *name, char *text, size_t len, hutch_error_t *err);
/* report_images.c: the images at the top of a run's files/ (run_fd: the
 * run's directory, bench_open_run_dir) as
 * [{name, src: data: URI} or {name, omitted: why}], taking at most *budget
 * bytes of URIs (decreased by what it takes). */
cJSON *bench_report_images(int run_fd, size_t *budget);
/* OUT/report.html of the benchmark run in OUT (its benchmark.json and the
 * runs' files), its finished tasks' lines given; elapsed: the run's time
 * (-1: not known). */
int bench_write_report(const char *out, const cJSON *lines, double elapsed, hutch_error_t *err);

/* hutch report DIR (report.c): report.html of a benchmark's run directory
 * or of a hutch run's. */
int bench_report_run(int argc, char **argv);

/* A new run directory OUTPUT/YYYYMMDD_HHMMSS_TASK_LLM_SUFFIX (SUFFIX:
 * LLMinSandbox or vanillaLLM, and the shard)
 * '/' in LLM as '_'; _2, _3... when it exists), absolute. */
char *bench_make_run_dir(const char *output_dir, const char *task, const char *llm_name, const char *suffix,
                         hutch_error_t *err);
/* LLM-in-Sandbox's name of a mode in run directory names. */
const char *bench_mode_suffix(const char *mode);
/* hutch benchmark merge DIR... [--output-dir DIR] (merge.c). */
int bench_merge(int argc, char **argv);

/* hutch benchmark judge (judge.c), and its pure parts: LLM-in-Sandbox's
 * judge prompt (the text after </think> of a reasoning answer), and the
 * verdict of a judge's reply (the last CORRECT or INCORRECT; UNKNOWN). */
int bench_judge(int argc, char **argv);
char *bench_judge_prompt(const char *question, const char *truth, const char *answer);
const char *bench_judge_verdict(const char *text);
/* A chat request of one user message (the judge's, --mode llm's): the
 * model without LiteLLM's routing prefix, max_tokens. */
cJSON *bench_one_message(const char *model, const char *prompt, long max_tokens);

/* The answer as LLM-in-Sandbox reads it: `cat answer.txt` stripped; text
 * that is not UTF-8 gets U+FFFD for each bad byte (and for NUL). */
char *bench_clean_answer(const char *bytes, size_t len);

#endif
