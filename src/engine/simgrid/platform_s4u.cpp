/* The generated platform built directly in SimGrid (docs/simgrid.md §2, §7 "Platform
 * loading"): the element sequence sgx_platform_emit walks, each element created through
 * SimGrid's C++ interface as its XML parser would create it from sgx_platform_write's
 * file (SimGrid 3.32, kernel/xml/platf.cpp: a zone is created with its parent and sealed
 * at its end, a host and a link sealed once declared, a route added with its links and
 * directions, symmetrical unless it says otherwise).
 *
 * Why not the XML: SimGrid's parser finds every <link_ctn> by name from the root zone
 * (s4u::Link::by_name -> NetZoneImpl::get_link_by_name_or_null, which looks in a zone's
 * own table and then searches its child zones one by one), so a route element in node u's
 * zone costs a search through the zones declared before it: quadratic in the nodes, 1.1 s
 * per load at 4,096 GPUs and 28 s at 16,384. The builder keeps its own table of what it
 * created. */
#include <simgrid/s4u/Engine.hpp>
#include <simgrid/s4u/Host.hpp>
#include <simgrid/s4u/Link.hpp>
#include <simgrid/s4u/NetZone.hpp>

#include <exception>
#include <string>
#include <unordered_map>
#include <vector>

extern "C" {
#include "engine/simgrid/sg_internal.h"
}

namespace sg4 = simgrid::s4u;
using simgrid::kernel::routing::NetPoint;

namespace {
struct builder {
	std::vector<sg4::NetZone *> zones;
	std::unordered_map<std::string, NetPoint *> points;
	std::unordered_map<std::string, sg4::Link *> links;
	std::string missing; /* the first name a route could not resolve */

	NetPoint *point(const char *id)
	{
		auto it = points.find(id);
		if (it == points.end()) {
			if (missing.empty())
				missing = id;
			return nullptr;
		}
		return it->second;
	}
};

builder *of(void *ctx) { return static_cast<builder *>(ctx); }

void b_zone_open(void *ctx, const char *id, bool empty)
{
	builder *b = of(ctx);
	sg4::NetZone *z = empty ? sg4::create_empty_zone(id) : sg4::create_full_zone(id);
	if (!b->zones.empty())
		z->set_parent(b->zones.back());
	b->points[id] = z->get_netpoint();
	b->zones.push_back(z);
}

void b_zone_close(void *ctx)
{
	builder *b = of(ctx);
	b->zones.back()->seal();
	b->zones.pop_back();
}

void b_host(void *ctx, const char *id, double speed)
{
	builder *b = of(ctx);
	sg4::Host *h = b->zones.back()->create_host(id, speed);
	h->seal();
	b->points[id] = h->get_netpoint();
}

void b_router(void *ctx, const char *id)
{
	builder *b = of(ctx);
	b->points[id] = b->zones.back()->create_router(id);
}

void b_link(void *ctx, const char *id, double bw, double lat, bool fatpipe)
{
	builder *b = of(ctx);
	/* in the root zone, whichever zone declares it (see the top of this file) */
	sg4::NetZone *z = b->zones.front();
	sg4::Link *l;
	if (fatpipe)
		l = z->create_link(id, bw)->set_sharing_policy(sg4::Link::SharingPolicy::FATPIPE);
	else
		l = z->create_split_duplex_link(id, bw);
	l->set_latency(lat)->seal();
	b->links[id] = l;
}

void b_route(void *ctx, const char *src, const char *dst, const char *gw_src, const char *gw_dst,
	     const sgx_hop *h, int n, bool symmetrical)
{
	builder *b = of(ctx);
	std::vector<sg4::LinkInRoute> hops;
	for (int i = 0; i < n; i++) {
		auto it = b->links.find(h[i].link);
		if (it == b->links.end()) {
			if (b->missing.empty())
				b->missing = h[i].link;
			return;
		}
		auto d = h[i].dir == 1   ? sg4::LinkInRoute::Direction::UP
			 : h[i].dir == 2 ? sg4::LinkInRoute::Direction::DOWN
					 : sg4::LinkInRoute::Direction::NONE;
		hops.emplace_back(it->second, d);
	}
	NetPoint *s = b->point(src), *t = b->point(dst);
	NetPoint *gs = gw_src ? b->point(gw_src) : nullptr, *gt = gw_dst ? b->point(gw_dst) : nullptr;
	if (!s || !t || (gw_src && !gs) || (gw_dst && !gt))
		return;
	b->zones.back()->add_route(s, t, gs, gt, hops, symmetrical);
}
} // namespace

extern "C" bool sgx_platform_build(const sgx_spec *s, config_error *err)
{
	builder b;
	sgx_sink k = {&b, b_zone_open, b_zone_close, b_host, b_router, b_link, b_route};
	try {
		if (!sgx_platform_emit(s, &k, err))
			return false;
	} catch (const std::exception &e) {
		return config_fail(err, "internal: SimGrid refused the generated platform: %s", e.what());
	}
	if (!b.missing.empty())
		return config_fail(err, "internal: the generated platform names '%s' before declaring it",
				   b.missing.c_str());
	return true;
}
