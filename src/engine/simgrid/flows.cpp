/* Posting a flow that stands for several identical ones (docs/simgrid.md §5.5): the part
 * of collectives.c that needs SimGrid's C++ interface, which its C interface lacks (the
 * network action behind a communication, and its sharing penalty).
 *
 * A side is posted as sg_mailbox_put_async / sg_mailbox_get_async post it (the same
 * s4u::Mailbox::put_init / get_init, started), but started inside one simcall that, when
 * this side is the second and the post therefore starts the communication (SimGrid 3.32,
 * CommImpl::isend / irecv: the match starts it, CommImpl::start creates its network
 * action), finds that action, the one just added to its model's started set, and divides
 * its sharing penalty by `weight`. In one simcall, nothing else can start or match in
 * between, so exactly one side of each flow does it.
 *
 * All the sides a rank posts at one instant of a phase start in one simcall
 * (sgx_flows_post), one after the other in the order the phase lists them, as separate
 * posts would at that instant: a simcall is a round trip through SimGrid's maestro (two
 * context switches and a scheduling round), and an all-to-all over 8 GPUs posts 14 sides
 * per rank (docs/simgrid.md §7, "Batched posts"). */
#include <simgrid/kernel/resource/Action.hpp>
#include <simgrid/kernel/resource/Model.hpp>
#include <simgrid/s4u/Comm.hpp>
#include <simgrid/s4u/Engine.hpp>
#include <simgrid/s4u/Mailbox.hpp>
#include <simgrid/simix.hpp>

#include <cstdint>

extern "C" {
#include "engine/simgrid/flows.h"
}

namespace sg4 = simgrid::s4u;
namespace res = simgrid::kernel::resource;

/* The action of a communication that started in this simcall: the last one its model
 * added to its started set (Action's constructor appends it there). */
static res::Action *action_of(const sg4::Comm &c)
{
	const void *impl = c.get_impl();
	for (res::Model *m : sg4::Engine::get_instance()->get_all_models()) {
		res::Action::StateSet *set = m->get_started_action_set();
		if (!set->empty() && set->back().get_activity() == impl)
			return &set->back();
	}
	return nullptr;
}

/* Starts one side of a flow (the caller is inside a simcall) and, when this start began
 * the communication and the flow stands for several, gives its network action the weight.
 * False when the action cannot take it. */
static bool start_weighted(sg4::Comm &c, int weight)
{
	c.start();
	if (weight <= 1)
		return true;
	const void *impl = c.get_impl();
	res::Action *a = action_of(c);
	if (a == nullptr)
		return true; /* not started: the other side's post will start it */
	if (a->get_sharing_penalty() <= 0 || a->get_activity() != impl)
		return false; /* a flow still in its latency (never: latencies are zero) */
	a->set_sharing_penalty(a->get_sharing_penalty() / weight);
	return true;
}

static sg4::CommPtr side(const sgx_post &p)
{
	static int token; /* SimGrid aborts on NULL payloads */
	static void *sink;
	sg4::CommPtr c = p.send ? p.mb->put_init(&token, static_cast<uint64_t>(p.bytes)) : p.mb->get_init();
	if (!p.send)
		c->set_dst_data(&sink, sizeof sink);
	return c;
}

extern "C" sg_comm_t sgx_flow_post(sg_mailbox_t mb, bool send, long bytes, int weight, bool *failed)
{
	sg_comm_t out;
	sgx_post p = {mb, bytes, weight, send};
	sgx_flows_post(&p, 1, &out, failed);
	return out;
}

extern "C" void sgx_flows_post(const sgx_post *p, int n, sg_comm_t *out, bool *failed)
{
	/* the comms are made outside the simcall (no SimGrid state changes), as
	 * sg_mailbox_put_async does before its start, and held by out (the reference
	 * sg_comm_wait_all drops, as sg_mailbox_put_async's); the starts in one simcall */
	for (int k = 0; k < n; k++)
		out[k] = side(p[k]).detach();
	bool ok = simgrid::kernel::actor::simcall_answered([out, p, n] {
		bool all = true;
		for (int k = 0; k < n; k++)
			all = start_weighted(*out[k], p[k].weight) && all;
		return all;
	});
	if (!ok && failed)
		*failed = true;
}
