# report.awk — turns the benchmark's CSV into the Markdown table, the
# targets check and the chart's data file.  Plain POSIX awk (mawk works).
#
#   awk -v chart=FILE -v peers='TAG=NAME;...' -f report.awk META RESULTS
#
# META: `bench-weft --list` (key|group|unit|flags|label|history).
# RESULTS: key,backend,status,median,min,max,reps,iters,sw_per_op,note lines
# with backend weft, nptl, nptl2 (NPTL left free to use every CPU), epoll
# or go (the echo rows' hand-written epoll loop and Go server; rows flagged
# "e" go to a table of their own, with those columns and the ratios to
# them), or weft-vpN (an M:N
# row measured with WEFT_VPS=N; rows flagged "m" go to a table of their
# own, a column per VP count, all unpinned), or a peer's tag (bench/peers/:
# the rows flagged "p" gain a column per peer, in the order of `peers`, then
# the best peer's median and Weft's median divided by it).
# Invariant: a cell shows a measured number or "n/a" with a footnote giving
# the reason the binary printed; nothing is ever filled in here.

BEGIN {
	FS = "|"; nkeys = 0; nfoot = 0
	np = 0
	if (peers != "") {
		n = split(peers, pl, ";")
		for (i = 1; i <= n; i++) {
			j = index(pl[i], "=")
			ptag[++np] = substr(pl[i], 1, j - 1)
			pname[np] = substr(pl[i], j + 1)
		}
	}
}

FNR == NR {
	key = $1
	order[++nkeys] = key
	group[key] = $2; unit[key] = $3; flags[key] = $4; label[key] = $5; hist[key] = $6
	next
}

{
	n = split($0, f, ",")
	if (n < 10)
		next
	id = f[1] SUBSEP f[2]
	seen[f[2]] = 1
	status[id] = f[3]; med[id] = f[4] + 0; lo[id] = f[5] + 0; hi[id] = f[6] + 0
	reps[id] = f[7] + 0; swop[id] = f[9]
	note[id] = f[10]
	for (i = 11; i <= n; i++)
		note[id] = note[id] ";" f[i]
}

function num(v, d) { return sprintf("%." d "f", v) }

# Three significant figures, in the unit that keeps the number readable.
function sig(v,   a) {
	a = v < 0 ? -v : v
	if (a >= 100) return num(v, 0)
	if (a >= 10) return num(v, 1)
	return num(v, 2)
}

function fmt_ns(v) {
	if (v < 0) return "< 0 ns"
	if (v < 1000) return sig(v) " ns"
	if (v < 1e6) return sig(v / 1e3) " µs"
	if (v < 1e9) return sig(v / 1e6) " ms"
	return sig(v / 1e9) " s"
}

function fmt_bytes(v) {
	if (v < 1024) return num(v, 0) " B"
	if (v < 1048576) return sig(v / 1024) " KiB"
	if (v < 1073741824) return sig(v / 1048576) " MiB"
	return sig(v / 1073741824) " GiB"
}

function fmt_count(v,   s, out) {
	s = num(v, 0)
	out = ""
	while (length(s) > 3) {
		out = "," substr(s, length(s) - 2) out
		s = substr(s, 1, length(s) - 3)
	}
	return s out
}

function fmt(k, v) {
	if (unit[k] == "bytes") return fmt_bytes(v)
	if (unit[k] == "count") return fmt_count(v)
	return fmt_ns(v)
}

function footnote(text,   i) {
	for (i = 1; i <= nfoot; i++)
		if (foot[i] == text)
			return i
	foot[++nfoot] = text
	return nfoot
}

function cell(k, b,   id, s) {
	id = k SUBSEP b
	if (!(id in status))
		return "—"
	if (status[id] != "ok")
		return "n/a [" footnote(note[id]) "]"
	s = fmt(k, med[id])
	if (is_bound(id))
		s = "≥ " s
	if (reps[id] > 1)
		s = s " (" fmt(k, lo[id]) "–" fmt(k, hi[id]) ")"
	else if (note[id] != "")
		s = s " [" footnote(note[id]) "]"
	return s
}

# A count the benchmark stopped short of the real limit on purpose.
function is_bound(id) { return substr(note[id], 1, 11) == "lower bound" }

function both_ok(k) {
	return status[k SUBSEP "weft"] == "ok" && status[k SUBSEP "nptl"] == "ok"
}

function ratio_of(k) {
	if (!both_ok(k) || med[k SUBSEP "weft"] <= 0 || med[k SUBSEP "nptl"] <= 0)
		return ""
	if (unit[k] == "count")
		return med[k SUBSEP "weft"] / med[k SUBSEP "nptl"]
	return med[k SUBSEP "nptl"] / med[k SUBSEP "weft"]
}

function ratio_cell(k,   r) {
	r = ratio_of(k)
	if (r == "")
		return "—"
	return (is_bound(k SUBSEP "nptl") ? "≤ " : "") (r < 10 ? num(r, 1) : num(r, 0)) "×" \
		(unit[k] == "count" ? " more" : "")
}

# One target line: "met" or "missed" and the numbers behind it.
function target_ratio(k, want,   r) {
	r = ratio_of(k)
	if (r == "")
		return "- " label[k] ": not measured on both (" cell(k, "weft") " / " cell(k, "nptl") ")"
	return "- " label[k] ": NPTL/Weft " num(r, 1) "× — target ≥ " want "×: " (r >= want ? "**met**" : "**missed**")
}

function target_mutex(   w, c, ok) {
	if (status["mutex" SUBSEP "weft"] != "ok")
		return "- mutex lock+unlock, no contention: not measured on Weft (" cell("mutex", "weft") ")"
	w = med["mutex" SUBSEP "weft"]
	c = med["cmpxchg" SUBSEP "weft"]
	ok = w <= 5 && (status["cmpxchg" SUBSEP "weft"] != "ok" || w < c)
	return "- mutex lock+unlock, no contention: " fmt_ns(w) " against the `lock cmpxchg` + store floor " \
		(status["cmpxchg" SUBSEP "weft"] == "ok" ? fmt_ns(c) : "(not measured)") \
		" — target ≤ 5 ns and below the floor: " (ok ? "**met**" : "**missed**")
}

# Issue 5: a Weft mechanism against the `lock cmpxchg` row, both on Weft.
function target_beats(k, ref,   w, c, d) {
	if (status[k SUBSEP "weft"] != "ok" || status[ref SUBSEP "weft"] != "ok")
		return "- " label[k] ": not measured against " label[ref] " (" cell(k, "weft") " / " cell(ref, "weft") ")"
	w = med[k SUBSEP "weft"]
	c = med[ref SUBSEP "weft"]
	d = w < c ? "**met**, " num(c / w, 1) "× faster" : "**missed** by " fmt_ns(w - c) " (" num(w / c, 1) "× slower)"
	return "- " label[k] ": " fmt_ns(w) " against " label[ref] " " fmt_ns(c) " — beats it: " d
}

function latency_line(k,   s, b, id) {
	s = "- " label[k] ":"
	for (b = 1; b <= 2; b++) {
		id = k SUBSEP (b == 1 ? "weft" : "nptl")
		s = s (b == 1 ? " Weft " : "; NPTL ")
		if (status[id] == "ok")
			s = s "median " fmt_ns(med[id]) ", max " fmt_ns(hi[id])
		else
			s = s "n/a"
	}
	return s " (no target; report)"
}

# Weft's median divided by backend b's, or "" when either is missing.
function quot(k, b) {
	if (status[k SUBSEP "weft"] != "ok" || status[k SUBSEP b] != "ok" || med[k SUBSEP b] <= 0)
		return ""
	return med[k SUBSEP "weft"] / med[k SUBSEP b]
}

function quot_cell(k, b,   q) {
	q = quot(k, b)
	return q == "" ? "—" : num(q, 2) "×"
}

# 1 if some row carries flag letter f.
function flagged(f,   i) {
	for (i = 1; i <= nkeys; i++)
		if (index(flags[order[i]], f))
			return 1
	return 0
}

# The echo rows: Weft, NPTL, the epoll loop and Go side by side.
function echo_table(   i, k, last) {
	if (!flagged("e"))
		return
	print ""
	print "| echo server | Weft | NPTL | epoll loop | Go (net) | Weft ÷ epoll loop | Weft ÷ NPTL | Weft ÷ Go |"
	print "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
	last = ""
	for (i = 1; i <= nkeys; i++) {
		k = order[i]
		if (!index(flags[k], "e"))
			continue
		if (group[k] != last) {
			printf "| **%s** | | | | | | | |\n", group[k]
			last = group[k]
		}
		printf "| %s | %s | %s | %s | %s | %s | %s | %s |\n", label[k], cell(k, "weft"), cell(k, "nptl"),
			cell(k, "epoll"), cell(k, "go"), quot_cell(k, "epoll"), quot_cell(k, "nptl"), quot_cell(k, "go")
	}
}

function echo_target(k, b, op, want, what,   q, ok) {
	q = quot(k, b)
	if (q == "")
		return "- " what ": not measured on both (" cell(k, "weft") " / " cell(k, b) ")"
	ok = op == ">=" ? q >= want : q <= want
	return "- " what " " num(q, 2) "× — target " (op == ">=" ? "≥ " : "≤ ") want "×: " (ok ? "**met**" : "**missed**")
}

# The M:N rows: Weft with each VP count, NPTL, all unpinned.
function mn_cell(k, b,   id, s) {
	s = cell(k, b)
	id = k SUBSEP b
	if (status[id] == "ok" && reps[id] > 1 && note[id] != "")
		s = s " [" footnote(note[id]) "]"
	return s
}

# med(k, a) / med(k, b): a's speed relative to b's, or "" if either is missing.
function mn_ratio(k, a, b) {
	if (status[k SUBSEP a] != "ok" || status[k SUBSEP b] != "ok" || med[k SUBSEP a] <= 0 || med[k SUBSEP b] <= 0)
		return ""
	if (unit[k] == "count")
		return med[k SUBSEP b] / med[k SUBSEP a]
	return med[k SUBSEP a] / med[k SUBSEP b]
}

function mn_ratio_cell(k, a, b,   q) {
	q = mn_ratio(k, a, b)
	return q == "" ? "—" : num(q, q < 10 ? 2 : q < 100 ? 1 : 0) "×"
}

function mn_vps_seen(   b, v, i, j, t) {
	nvp = 0
	for (b in seen)
		if (b ~ /^weft-vp[0-9]+$/) {
			v = substr(b, 8) + 0
			vpl[++nvp] = v
		}
	for (i = 2; i <= nvp; i++)
		for (j = i; j > 1 && vpl[j - 1] > vpl[j]; j--) {
			t = vpl[j]; vpl[j] = vpl[j - 1]; vpl[j - 1] = t
		}
}

function mn_table(   i, j, k, lo, hi, h, sep) {
	if (!flagged("m"))
		return
	mn_vps_seen()
	h = "| M:N, unpinned |"
	sep = "| --- |"
	for (j = 1; j <= nvp; j++) {
		h = h " Weft, " vpl[j] " VP" (vpl[j] == 1 ? "" : "s") " |"
		sep = sep " ---: |"
	}
	lo = "weft-vp" vpl[1]
	hi = "weft-vp" vpl[nvp]
	if (nvp > 1) {
		h = h " speed-up " vpl[1] " → " vpl[nvp] " VPs |"
		sep = sep " ---: |"
	}
	h = h " NPTL, all CPUs | NPTL ÷ Weft" (nvp ? ", " vpl[nvp] " VP" (vpl[nvp] == 1 ? "" : "s") : "") " |"
	sep = sep " ---: | ---: |"
	print ""
	print h
	print sep
	for (i = 1; i <= nkeys; i++) {
		k = order[i]
		if (!index(flags[k], "m"))
			continue
		printf "| %s |", label[k]
		for (j = 1; j <= nvp; j++)
			printf " %s |", mn_cell(k, "weft-vp" vpl[j])
		if (nvp > 1)
			printf " %s |", mn_ratio_cell(k, lo, hi)
		printf " %s | %s |\n", mn_cell(k, "nptl"), nvp ? mn_ratio_cell(k, "nptl", hi) : "—"
	}
}

# Below the M:N table: the speed-up target and the numbers the cost model
# (bench/performance.md.in, "M:N: how the costs grow to 64 cores") uses.
function mn_summary(   lo, hi, q, t, w1, w2, c) {
	if (!nvp)
		return
	lo = "weft-vp" vpl[1]
	hi = "weft-vp" vpl[nvp]
	t = ""
	if ("mn_cpu_speedup" in label) {
		q = mn_ratio("mn_cpu_speedup", lo, hi)
		if (q == "" || nvp < 2)
			t = t "- CPU-bound speed-up, " vpl[1] " → " vpl[nvp] " VPs: not measured (" mn_cell("mn_cpu_speedup", lo) " / " \
				mn_cell("mn_cpu_speedup", hi) ")\n"
		else
			t = t "- CPU-bound speed-up, " vpl[1] " → " vpl[nvp] " VPs: " num(q, 2) "× — target ≥ 1.8× (two VPs, two CPUs): " \
				(q >= 1.8 ? "**met**" : "**missed**") \
				(index(note["mn_cpu_speedup" SUBSEP hi], "ran on ") == 1 ? " (the " vpl[nvp] "-VP child did not get " vpl[nvp] " VPs: see its note)" : "") "\n"
	}
	if ("mn_lock_uncontended" in label && status["mn_lock_uncontended" SUBSEP hi] == "ok") {
		w1 = med["mn_lock_uncontended" SUBSEP lo]
		w2 = med["mn_lock_uncontended" SUBSEP hi]
		c = status["mn_cmpxchg" SUBSEP hi] == "ok" ? med["mn_cmpxchg" SUBSEP hi] : -1
		t = t "- uncontended lock + unlock: " med_or_na("mn_lock_uncontended", lo) " on " vpl[1] " VP, " fmt_ns(w2) " on " vpl[nvp] \
			" (" (w2 >= w1 ? "+" : "−") fmt_ns(w2 >= w1 ? w2 - w1 : w1 - w2) "), NPTL " med_or_na("mn_lock_uncontended", "nptl") \
			"; the `lock cmpxchg` + store floor " (c >= 0 ? fmt_ns(c) : "n/a") "\n"
	}
	if ("skynet" in label || "skynet_100k" in label)
		t = t "- skynet, 1,111,111 threads: Weft " med_or_na("skynet", lo) " on " vpl[1] " VP, " med_or_na("skynet", hi) " on " vpl[nvp] \
			", NPTL " med_or_na("skynet", "nptl") ", Go " med_or_na("skynet_go", "nptl") "; 111,111 threads: Weft " \
			med_or_na("skynet_100k", lo) " / " med_or_na("skynet_100k", hi) ", NPTL " med_or_na("skynet_100k", "nptl") "\n"
	if (t != "")
		printf "\nM:N, measured (the model's inputs; one target):\n\n%s", t
}

# Backend b's median of row k, formatted, or "n/a".
function med_or_na(k, b) {
	return status[k SUBSEP b] == "ok" ? fmt(k, med[k SUBSEP b]) : "n/a"
}

# x / y to two places, or "?" when either is missing.
function div(k1, b1, k2, b2) {
	if (status[k1 SUBSEP b1] != "ok" || status[k2 SUBSEP b2] != "ok" || med[k2 SUBSEP b2] <= 0)
		return "?"
	return num(med[k1 SUBSEP b1] / med[k2 SUBSEP b2], 2)
}

# Issue 13: a wrapped call that does not block against glibc's (NPTL) and
# against the kernel call alone (row k "_raw", a syscall instruction, Weft's
# binary).
function overhead_line(k,   raw, s) {
	raw = k "_raw"
	s = "- " label[k] ": Weft " med_or_na(k, "weft") ", NPTL " med_or_na(k, "nptl") ", the call alone " \
		med_or_na(raw, "weft") " — Weft ÷ NPTL " div(k, "weft", k, "nptl") "×, Weft ÷ alone " \
		div(k, "weft", raw, "weft") "×"
	if (status[k SUBSEP "weft"] == "ok" && status[raw SUBSEP "weft"] == "ok")
		s = s " (" (med[k SUBSEP "weft"] >= med[raw SUBSEP "weft"] ? "+" : "−") \
			fmt_ns(med[k SUBSEP "weft"] >= med[raw SUBSEP "weft"] ? med[k SUBSEP "weft"] - med[raw SUBSEP "weft"] : \
			med[raw SUBSEP "weft"] - med[k SUBSEP "weft"]) ")"
	return s
}

# The compute threads' rate the database-server rows put in their note.
function units(k, b,   id) {
	id = k SUBSEP b
	if (status[id] != "ok" || !match(note[id], /: [0-9]+ hash units\/s/))
		return "?"
	return fmt_count(substr(note[id], RSTART + 2, RLENGTH - 15) + 0)
}

# The mean pread and write + fsync times the database-server rows put in their note: "R / S µs".
function io_times(k, b,   id, r) {
	id = k SUBSEP b
	if (status[id] != "ok" || !match(note[id], /pread [0-9]+ us and write \+ fsync [0-9]+ us/))
		return "?"
	r = substr(note[id], RSTART + 6, RLENGTH - 9)
	sub(/ us and write \+ fsync /, " / ", r)
	return r " µs"
}

function activations_summary(   i, k, t) {
	t = ""
	for (i = 1; i <= nkeys; i++) {
		k = order[i]
		if ((k "_raw") in label)
			t = t overhead_line(k) "\n"
	}
	if ("handoff_known" in label)
		t = t "- handoff latency, known blocking (semop): Weft " med_or_na("handoff_known", "weft") ", NPTL " \
			med_or_na("handoff_known", "nptl") " — Weft ÷ NPTL " div("handoff_known", "weft", "handoff_known", "nptl") "×\n"
	if ("rejoin_busy" in label)
		t = t "- rejoin latency, processor busy (post to the waiter running while another thread computes): Weft " \
			med_or_na("rejoin_busy", "weft") ", NPTL " med_or_na("rejoin_busy", "nptl") "\n"
	if ("handoff_unknown" in label)
		t = t "- handoff latency, unknown blocking (a read another process answers after 200 ms): Weft " \
			med_or_na("handoff_unknown", "weft") " (syscall instruction in the program's text " \
			med_or_na("handoff_unknown_asm", "weft") ", WEFT_ACTIVATIONS=off " med_or_na("handoff_unknown_off", "weft") \
			"), NPTL " med_or_na("handoff_unknown", "nptl") "\n"
	if ("dbserver" in label)
		t = t "- database server, queries per second: Weft " med_or_na("dbserver", "weft") ", NPTL on the same CPU " \
			med_or_na("dbserver", "nptl") ((("dbserver" SUBSEP "nptl2") in status) ? " (on every CPU " med_or_na("dbserver", "nptl2") ")" : "") \
			", Weft with WEFT_ACTIVATIONS=off " med_or_na("dbserver_off", "weft") " — Weft ÷ NPTL " \
			div("dbserver", "weft", "dbserver", "nptl") "×, Weft ÷ Weft off " div("dbserver", "weft", "dbserver_off", "weft") \
			"×; meanwhile the compute threads' hash units per second: Weft " units("dbserver", "weft") ", NPTL " \
			units("dbserver", "nptl") ", Weft off " units("dbserver_off", "weft") "; mean pread / write + fsync as the threads " \
			"saw them: Weft " io_times("dbserver", "weft") ", NPTL " io_times("dbserver", "nptl") ", Weft off " \
			io_times("dbserver_off", "weft") "\n"
	if (t != "")
		printf "\nActivations (issue 13), measured (no targets):\n\n%s", t
}

# The peer with the best median on row k (the least; the most for a
# count), as its index in ptag, or 0 when no peer measured the row.
function best_peer(k,   i, b, id) {
	b = 0
	for (i = 1; i <= np; i++) {
		id = k SUBSEP ptag[i]
		if (status[id] != "ok" || med[id] <= 0)
			continue
		if (!b || (unit[k] == "count" ? med[id] > med[k SUBSEP ptag[b]] : med[id] < med[k SUBSEP ptag[b]]))
			b = i
	}
	return b
}

# Weft's median divided by peer p's (for a count, p's by Weft's: above 1
# is Weft behind either way), or "".
function peer_quot(k, p,   q) {
	q = quot(k, p)
	if (q == "" || unit[k] != "count")
		return q
	return q > 0 ? 1 / q : ""
}

# The peers' cells of row k: one per peer, the best, Weft ÷ best.
function peer_cells(k,   i, b, q, s) {
	s = ""
	if (!index(flags[k], "p")) {
		for (i = 1; i <= np + 2; i++)
			s = s " |"
		return s
	}
	for (i = 1; i <= np; i++)
		s = s " " cell(k, ptag[i]) " |"
	b = best_peer(k)
	if (!b)
		return s " — | — |"
	q = peer_quot(k, ptag[b])
	return s " " fmt(k, med[k SUBSEP ptag[b]]) " (" pname[b] ") | " (q == "" ? "—" : times(q)) " |"
}

# A ratio: two decimals below 10, one below 100, none above.
function times(q) { return num(q, q < 10 ? 2 : q < 100 ? 1 : 0) "×" }

# Issue 21: Weft against the peers, one line per peer row: against the
# best peer (yield: against 1.5 times the bare switch, Boost fcontext;
# memory: against State Threads).
function peer_target(k,   b, ref, want, what, q, i) {
	b = 0
	want = 1
	if (k == "yield_busy") {
		ref = "boost-fcontext"; want = 1.5; what = "≤ 1.5× the bare switch"
	} else if (k ~ /^mem_/) {
		ref = "st"; what = "≤ State Threads'"
	} else {
		b = best_peer(k)
		ref = b ? ptag[b] : ""
		what = "≤ the best peer's"
	}
	for (i = 1; i <= np; i++)
		if (ptag[i] == ref)
			b = i
	if (status[k SUBSEP "weft"] != "ok")
		return "- " label[k] ": not measured on Weft (" cell(k, "weft") ")"
	if (ref == "" || status[k SUBSEP ref] != "ok")
		return "- " label[k] ": Weft " fmt(k, med[k SUBSEP "weft"]) "; " \
			(ref == "" ? "no peer has it" : pname[b] " not measured (" cell(k, ref) ")")
	q = peer_quot(k, ref)
	return "- " label[k] ": Weft " fmt(k, med[k SUBSEP "weft"]) " against " pname[b] " " fmt(k, med[k SUBSEP ref]) \
		" — Weft ÷ " pname[b] " " times(q) ", target " what ": " (q <= want ? "**met**" : "**missed**")
}

END {
	two = ("nptl2" in seen)
	with_peers = np && flagged("p")
	ph = ""; psep = ""; pgap = ""
	if (with_peers) {
		for (i = 1; i <= np; i++) {
			ph = ph " " pname[i] " |"
			psep = psep " ---: |"
			pgap = pgap " |"
		}
		ph = ph " best peer | Weft ÷ best peer |"
		psep = psep " ---: | ---: |"
		pgap = pgap " | |"
	}
	printf "| metric | Weft | NPTL | NPTL/Weft |%s%s papers (machine); peers |\n", two ? " NPTL, all CPUs |" : "", ph
	printf "| --- | ---: | ---: | ---: |%s%s --- |\n", two ? " ---: |" : "", psep
	last = ""
	for (i = 1; i <= nkeys; i++) {
		k = order[i]
		if (index(flags[k], "e") || index(flags[k], "m"))
			continue
		if (group[k] != last) {
			printf "| **%s** | | | |%s%s |\n", group[k], two ? " |" : "", pgap
			last = group[k]
		}
		printf "| %s | %s | %s | %s |", label[k], cell(k, "weft"), cell(k, "nptl"), ratio_cell(k)
		if (two)
			printf " %s |", index(flags[k], "u") ? cell(k, "nptl2") : ""
		if (with_peers)
			printf "%s", peer_cells(k)
		printf " %s |\n", hist[k] == "-" ? "" : hist[k]
	}
	echo_table()
	mn_table()
	if (nfoot) {
		print ""
		for (i = 1; i <= nfoot; i++)
			printf "[%d] %s  \n", i, foot[i]
	}
	# The targets of the rows this run measured (all of them, unless the
	# run was one family's: FAMILY=...).
	t = ""
	if ("yield_busy" in label) t = t target_ratio("yield_busy", 50) "\n"
	if ("create_join" in label) t = t target_ratio("create_join", 20) "\n"
	if ("mutex" in label) t = t target_mutex() "\n"
	if ("mutex_handoff" in label) t = t target_ratio("mutex_handoff", 20) "\n"
	if ("sem" in label) t = t target_ratio("sem", 20) "\n"
	if ("pingpong" in label) t = t target_ratio("pingpong", 20) "\n"
	if (t != "")
		printf "\nTargets (issues 2 and 3):\n\n%s", t
	t = ""
	if ("mutex" in label) t = t target_mutex() "\n"
	if ("tas_dr" in label) t = t target_beats("tas_dr", "tas_cas") "\n"
	if ("tas_ras" in label) t = t target_beats("tas_ras", "tas_cas") "\n"
	if ("tas_rasi" in label) t = t target_beats("tas_rasi", "tas_cas") "\n"
	if ("preempt_latency" in label) t = t latency_line("preempt_latency") "\n"
	if (t != "")
		printf "\nTargets (issue 5):\n\n%s", t
	t = ""
	if (with_peers)
		for (i = 1; i <= nkeys; i++)
			if (index(flags[order[i]], "p"))
				t = t peer_target(order[i]) "\n"
	if (t != "")
		printf "\nTargets (issue 21), Weft against the peers (bench/peers/):\n\n%s", t
	activations_summary()
	mn_summary()
	if ("echo10k_rps" in group) {
		print ""
		print "Targets (issue 12), echo server at 10,000 connections:"
		print ""
		print echo_target("echo10k_rps", "epoll", ">=", 0.9, "throughput, Weft ÷ epoll loop")
		print echo_target("echo10k_rps", "nptl", ">=", 2, "throughput, Weft ÷ NPTL")
		print echo_target("echo10k_p99", "epoll", "<=", 1.5, "p99 round trip, Weft ÷ epoll loop")
	}

	# (a run of only some rows, ONLY=..., prints only their targets)
	if (chart != "") {
		for (i = 1; i <= nkeys; i++) {
			k = order[i]
			if (unit[k] != "ns" || index(flags[k], "e") || index(flags[k], "m"))
				continue
			w = status[k SUBSEP "weft"] == "ok" && med[k SUBSEP "weft"] > 0 ? med[k SUBSEP "weft"] : "?"
			p = status[k SUBSEP "nptl"] == "ok" && med[k SUBSEP "nptl"] > 0 ? med[k SUBSEP "nptl"] : "?"
			if (w == "?" && p == "?")
				continue
			printf "%s %s %s\n", k, w, p > chart
		}
		close(chart)
	}
}
