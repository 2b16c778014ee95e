/* engine/simgrid: the discrete-event engine. The platform becomes a SimGrid platform
 * (platform.c), every GPU an actor per stream that executes the op program with
 * executions and flows (executor.c, collectives.c). docs/simgrid.md derives the
 * generated platform, the collective algorithms and the exactness of the two reductions
 * that make large runs fast (ring aggregation, translation symmetry).
 *
 * SimGrid can be initialised once per process: engine_simgrid.run forks a child per
 * simulation; engine_simgrid_run_with runs in the calling process, once. */
#ifndef SPSIM_ENGINE_SIMGRID_SIMGRID_H
#define SPSIM_ENGINE_SIMGRID_SIMGRID_H

#include <stdio.h>

#include "engine/engine.h"

/* Tells engine/registry.c that this engine is built. */
#define SPSIM_SIMGRID_READY 1

extern const engine_ops engine_simgrid;

/* Writes the SimGrid platform (XML, DTD 4.1) generated for p: one zone per node, a host
 * per GPU, the intra-node fabric, NICs and the inter-node network. Link latencies are
 * the platform's; bandwidths are effective (x efficiency). */
bool engine_simgrid_platform_xml(const config_platform *p, FILE *out, config_error *err);

/* engine_placement_parse and engine_placement_map are in engine/engine.h (placement.c). */

/* Knobs of the reductions, for tests and the benchmark; engine_simgrid.run uses the
 * defaults (every reduction on where it is exact). */
typedef enum engine_simgrid_ring_mode {
	ENGINE_SG_RING_AGGREGATED, /* one flow per ring edge carrying every step's bytes */
	ENGINE_SG_RING_LOCKSTEP,   /* one flow per edge per step, steps in sequence */
} engine_simgrid_ring_mode;

typedef struct engine_simgrid_options {
	engine_simgrid_ring_mode ring;
	bool symmetry;   /* simulate one period of nodes when the system is translation symmetric */
	bool merge_compute; /* run back-to-back compute ops as one execution */
	bool compute_timer; /* when one stream computes per GPU, compute waits its time instead of
			       running a SimGrid execution (the same time: docs/simgrid.md §4) */
	bool repeat;     /* engine_simgrid_run_opt: simulate identical layers and micro-steps a few
			    times and extrapolate once the schedule repeats (docs/simgrid.md §5.4) */
	bool repeat_always; /* with repeat: try the windows even where they move as many flows as
			       the full program (default: such a window is skipped; tests) */
	bool merge_flows; /* identical flows of a phase (same ends, same size: the ring channels
			     that share a GPU pair) as one flow weighted as all of them
			     (docs/simgrid.md §5.5) */
	bool share_prefix; /* with repeat: a window's layer counts run as one simulation of the
			      largest that forks a copy of itself at the instant each smaller
			      count's program departs from it (docs/simgrid.md §5.4) */
	bool sync_blocks; /* every barrier block starts when every rank has reached it (a world
			     barrier, as nccl-tests' Barrier() before each size it times): the
			     collective timer's sizes, each timed from one common start */
} engine_simgrid_options;

typedef struct engine_simgrid_stats {
	int simulated_ranks; /* ranks with actors (a period under symmetry, else the world) */
	int period_nodes;    /* nodes in the simulated period (0: no symmetry used) */
	long flows;          /* flows started */
	long executions;     /* compute executions started */
	long full_flows;     /* engine_simgrid_run_opt: flows the full program moves (counted
				without simulating), against which the windows are weighed */
	double xml_bytes;    /* size of the generated platform */
	int copies;          /* results of forked copies used (docs/simgrid.md §5.4 "Shared prefixes") */
	int copies_missing;  /* forked copies that brought no result (their counts were then
				simulated alone: the same result, more work) */
} engine_simgrid_stats;

void engine_simgrid_options_default(engine_simgrid_options *o);

/* engine_simgrid.run runs each simulation in a child process (any number per process).
 * engine_simgrid_run_with runs it in this process, with explicit options (NULL: the
 * defaults) and statistics (may be NULL): once per process, as SimGrid allows. */
bool engine_simgrid_run_with(const engine_input *in, const engine_simgrid_options *o, engine_result *out,
			     engine_simgrid_stats *stats, config_error *err);

/* What engine_simgrid.run does (each simulation in a child process, identical layers and
 * micro-steps extrapolated when o->repeat), with explicit options (NULL: the defaults);
 * stats (may be NULL) sums the flows and executions of every simulation it ran. */
bool engine_simgrid_run_opt(const engine_input *in, const engine_simgrid_options *o, engine_result *out,
			    engine_simgrid_stats *stats, config_error *err);

/* Times one collective at each of `n` sizes (bytes as nccl-tests counts them, as
 * workload_op.bytes), `gpus` ranks in disjoint groups of `group_size` running it at once,
 * placed by opt. times[i]: the slowest rank's time for sizes[i]; the sizes run one after
 * another, separated by barriers, in one simulation (in a child process). */
#define ENGINE_SIMGRID_COLLECTIVE_READY 1
bool engine_simgrid_collective_times(const config_platform *p, workload_coll coll, workload_alg alg, int gpus,
				     int group_size, const engine_options *opt, const double *sizes, int n,
				     double *times, config_error *err);

#endif
