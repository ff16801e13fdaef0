/*
 * boost_context.cpp — the Boost.Context peer (bench-peer-boost, Debian's
 * libboost-context-dev 1.74), in two variants chosen by --tag:
 *
 *   boost-fcontext  the bare switch under every Boost.Context interface
 *                   (jump_fcontext, which callcc's continuation and fiber
 *                   both use): two contexts jumping to each other, the
 *                   least a switch between stacks can cost with a library
 *   boost-fiber     boost::context::fiber, its current interface: a fiber
 *                   made with its stack, resumed, ended
 *
 * Boost.Context switches and creates, and nothing more: no scheduler, no
 * mutex, condition, semaphore, once, self or keys (Boost.Fiber builds
 * those on it; not measured here), so those rows say n/a.  A switch here
 * is one resume (or one jump); the yield row's loop is fam_floor.c's
 * register-only switch loop, two switches a round.  Create + join is a
 * fiber that returns at once, resumed until it has ended, its stack from
 * the default allocator (fixedsize_stack: malloc of 128 KiB, which glibc
 * serves from its heap once the first one is freed) or a 64 KiB one.
 * The memory rows keep fibers suspended in their first resume, in a fresh
 * process: glibc maps each of their 128 KiB stacks on its own (64K maps
 * at most, then its heap), so a fiber touches the mapping's malloc header
 * page as well as its stack's top page.
 */
#include <boost/context/detail/fcontext.hpp>
#include <boost/context/fiber.hpp>
#include <boost/context/fixedsize_stack.hpp>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <utility>
#include <vector>

#include "peer.h"

namespace bctx = boost::context;
namespace fctx = boost::context::detail;

namespace {

/* ------------------------------------------------------------------ */
/* fcontext: the bare switch                                           */

constexpr std::size_t switch_stack_size = 64 * 1024;

BENCH_ALIGNED void fcontext_partner(fctx::transfer_t t)
{
	for (;;)
		t = fctx::jump_fcontext(t.fctx, nullptr);
}

/* The partner is made afresh for every measurement, on the same stack:
 * make_fcontext records the caller's MXCSR and x87 control word, and each
 * jump loads the other context's.  A partner made once, before the
 * harness's own floating-point work set MXCSR's sticky flags in main,
 * made every jump load a different MXCSR, which costs about 70 ns a jump
 * on the Intel Xeon guest (5 ns when they match): the row then measured
 * that, not the bare switch. */
BENCH_ALIGNED int64_t m_fcontext_switch(uint64_t n)
{
	static void *stack;
	if (!stack && !(stack = std::aligned_alloc(64, switch_stack_size)))
		peer_die("aligned_alloc");
	fctx::fcontext_t partner = fctx::make_fcontext(static_cast<char *>(stack) + switch_stack_size,
							switch_stack_size, fcontext_partner);
	uint64_t rounds = n / 2 + 1;
	int64_t t0 = now_ns();
	for (uint64_t i = 0; i < rounds; i++)
		partner = fctx::jump_fcontext(partner, nullptr).fctx;
	int64_t dt = now_ns() - t0;
	return dt * (int64_t)n / (int64_t)(2 * rounds);
}

/* ------------------------------------------------------------------ */
/* fiber                                                               */

/* Two fibers resuming each other: main and a partner, per switch. */
BENCH_ALIGNED int64_t m_fiber_switch(uint64_t n)
{
	bctx::fiber partner{[](bctx::fiber &&main) {
		for (;;)
			main = std::move(main).resume();
		return std::move(main);
	}};
	partner = std::move(partner).resume();   /* started, outside the timed loop */
	uint64_t rounds = n / 2 + 1;
	int64_t t0 = now_ns();
	for (uint64_t i = 0; i < rounds; i++)
		partner = std::move(partner).resume();
	int64_t dt = now_ns() - t0;
	return dt * (int64_t)n / (int64_t)(2 * rounds);   /* partner is unwound as it goes out of scope */
}

/* A fiber that ends at once, resumed until it has: created, run, joined. */
template <typename Make> BENCH_ALIGNED int64_t fiber_create_join(uint64_t n, Make make)
{
	int64_t t0 = now_ns();
	for (uint64_t i = 0; i < n; i++) {
		bctx::fiber f = make([](bctx::fiber &&main) { return std::move(main); });
		f = std::move(f).resume();
		if (f)
			peer_die("a fiber did not end");
	}
	return now_ns() - t0;
}

int64_t m_fiber_create_join(uint64_t n)
{
	return fiber_create_join(n, [](auto fn) { return bctx::fiber{fn}; });
}

int64_t m_fiber_create_join_64k(uint64_t n)
{
	return fiber_create_join(
		n, [](auto fn) { return bctx::fiber{std::allocator_arg, bctx::fixedsize_stack(64 * 1024), fn}; });
}

/* Fibers suspended in their first resume, kept for good. */
long park(long want)
{
	static auto *parked = new std::vector<bctx::fiber>;
	long made = 0;
	try {
		for (; made < want; made++) {
			bctx::fiber f{[](bctx::fiber &&main) {
				main = std::move(main).resume();
				return std::move(main);
			}};
			parked->push_back(std::move(f).resume());
		}
	} catch (const std::bad_alloc &) {
	}
	return made;
}

void m_mem_10k(struct result *r) { peer_mem_row(r, 10000, park); }
void m_mem_100k(struct result *r) { peer_mem_row(r, 100000, park); }

/* ------------------------------------------------------------------ */
/* The rows                                                            */

constexpr const char *no_sched = "Boost.Context has no scheduler and no synchronisation (Boost.Fiber's; not measured)";
constexpr const char *no_thread_state = "Boost.Context keeps no per-fiber identity or data";
constexpr const char *bare = "fcontext is the bare switch: no stack of its own to make (see the Boost fiber column)";

const struct peer_row fcontext_rows[] = {
	{ "once", nullptr, nullptr, no_sched },
	{ "self", nullptr, nullptr, no_thread_state },
	{ "getspecific", nullptr, nullptr, no_thread_state },
	{ "yield_busy", m_fcontext_switch, nullptr, nullptr },
	{ "create_join", nullptr, nullptr, bare },
	{ "create_join_64k", nullptr, nullptr, bare },
	{ "mutex", nullptr, nullptr, no_sched },
	{ "mutex_handoff", nullptr, nullptr, no_sched },
	{ "pingpong", nullptr, nullptr, no_sched },
	{ "sem", nullptr, nullptr, no_sched },
	{ "mem_10k", nullptr, nullptr, bare },
	{ "mem_100k", nullptr, nullptr, bare },
};

const struct peer_row fiber_rows[] = {
	{ "once", nullptr, nullptr, no_sched },
	{ "self", nullptr, nullptr, no_thread_state },
	{ "getspecific", nullptr, nullptr, no_thread_state },
	{ "yield_busy", m_fiber_switch, nullptr, nullptr },
	{ "create_join", m_fiber_create_join, nullptr, nullptr },
	{ "create_join_64k", m_fiber_create_join_64k, nullptr, nullptr },
	{ "mutex", nullptr, nullptr, no_sched },
	{ "mutex_handoff", nullptr, nullptr, no_sched },
	{ "pingpong", nullptr, nullptr, no_sched },
	{ "sem", nullptr, nullptr, no_sched },
	{ "mem_10k", nullptr, m_mem_10k, nullptr },
	{ "mem_100k", nullptr, m_mem_100k, nullptr },
};

const struct peer fcontext_peer = { fcontext_rows, sizeof fcontext_rows / sizeof fcontext_rows[0] };
const struct peer fiber_peer = { fiber_rows, sizeof fiber_rows / sizeof fiber_rows[0] };

} // namespace

extern "C" const struct peer *peer_select(const char *tag)
{
	if (!std::strcmp(tag, "boost-fcontext"))
		return &fcontext_peer;
	if (!std::strcmp(tag, "boost-fiber"))
		return &fiber_peer;
	return nullptr;
}
