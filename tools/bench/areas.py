#!/usr/bin/env python3
"""Group a `go tool pprof -traces` dump of `leasegate bench` by area.

Each sample goes to the first frame, from the leaf up, that belongs to an
area; runtime and plumbing frames (net, syscall, internal/poll, sync,
malloc, ...) are skipped, so a syscall or an allocation counts for the
package that made it (a write on the gateway's socket is the net/http
server's, a read on a Redis connection go-redis's). GC (background
mark workers, sweeping, and assists charged to an allocation) is counted
apart wherever it appears in a stack. For a CPU profile, drop the load driver
first with -tagignore role=driver:

  go tool pprof -traces -tagignore role=driver leasegate cpu.pprof > gw.traces
  python3 tools/bench/areas.py gw.traces --cycles N   # N: cycles of that phase (-json)

  go tool pprof -traces -sample_index=alloc_space leasegate mem.pprof > mem.traces
  python3 tools/bench/areas.py mem.traces --allocs

CPU values are milliseconds (so per cycle: µs); alloc values are objects
or bytes.
"""
import collections
import re

def parse(path):
    out=[]; cur=None
    for line in open(path):
        if line.startswith('-----'):
            if cur: out.append(cur)
            cur=None; continue
        m=re.match(r'\s+(\d+(?:\.\d+)?)(ms|s|us|µs|B|kB|MB|GB)?\s+(\S.*)$', line)
        if m and cur is None and (m.group(2) or re.match(r'\s+\d+\s+\S', line)):
            v=float(m.group(1)); u=m.group(2) or ''
            v = {'s':1000,'us':1e-3,'µs':1e-3,'kB':1024,'MB':1024**2,'GB':1024**3}.get(u,1)*v
            cur=[v,[m.group(3).strip()]]; continue
        if cur is not None and line.strip(): cur[1].append(line.strip())
    if cur: out.append(cur)
    return out
roots=[
 ('GC', r'^runtime\.(gcBgMarkWorker|gcAssistAlloc|bgsweep|bgscavenge|gcMarkDone|gcStart|markroot|gcDrain|forEachP|stopTheWorld)'),
]
owners=[
 ('go-redis client (commands, pool, RESP, socket I/O)', r'github\.com/redis/go-redis|leasegate/metrics\.\(\*.*\)\.(Process|Dial)|metrics\.RedisHook'),
 ('logging (zap, request log)', r'go\.uber\.org/zap|handlers\.New\.requestLogger'),
 ('metrics (prometheus)', r'prometheus|leasegate/metrics'),
 ('JSON decode/encode + validation', r'encoding/json|handlers\.(readBody|decodeObject|\(\*checker\)|writeJSON|sendJSON|hasControl|pathParam|unescapePath)'),
 ('lock engine (redislock, keyspace, scripts)', r'leasegate/(redislock|keyspace|scripts)'),
 ('net/http server (parse, write, conn, syscalls)', r'server\.problemConn|server\.problemListener'),
 ('Echo routing (Router.Find, Echo.ServeHTTP itself)', r'echo/v4\.\(\*Router\)|echo/v4\.\(\*Echo\)\.(findRouter|ServeHTTP)$|echo/v4\.\(\*node\)'),
 ('handler glue (handlers, auth, Echo context, context.WithTimeout)', r'leasegate/(handlers|auth|server)|labstack/echo'),
 ('net/http server (parse, write, conn, syscalls)', r'^net/http\.|^net/textproto|^net/url'),
 ('scheduler, netpoll', r'^runtime\.(schedule|findRunnable|mcall|park_m|netpoll|goready|ready|wakep|startm|stopm|notesleep|futex|gopark|goexit|mstart|sysmon|exitsyscall|entersyscall|goschedImpl|gosched_m)'),
]
def classify(stack):
    for name, rx in roots:
        if any(re.search(rx, f) for f in stack): return name
    for f in stack:
        for name, rx in owners:
            if re.search(rx, f): return name
    return 'other (runtime, timers, ...)'

def main():
    import argparse
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument('traces', help='output of go tool pprof -traces')
    ap.add_argument('--cycles', type=float, help='cycles in the profiled phase: print per-cycle figures')
    ap.add_argument('--allocs', action='store_true',
                    help='an allocs profile of a whole run: keep the gateway\'s stacks only (drop the drivers\')')
    a = ap.parse_args()
    samples = parse(a.traces)
    if a.allocs:
        drivers = re.compile(r'leasegate/bench\.|persistConn|http\.\(\*Transport\)')
        gw = re.compile(r'net/http\.\(\*conn\)\.serve|go-redis')
        split = collections.Counter()
        kept = []
        for v, st in samples:
            j = ' '.join(st)
            if 'bench.(*floor)' in j:
                split['floor driver'] += v
            elif drivers.search(j):
                split['gateway-phase driver'] += v
            elif gw.search(j):
                split['gateway'] += v
                kept.append((v, st))
            else:
                split['other'] += v
        print('stacks:', dict(split))
        print('gateway share of the gateway phase: %.3f' % (split['gateway'] / (split['gateway'] + split['gateway-phase driver'])))
        samples = kept
    total = sum(v for v, _ in samples)
    agg = collections.Counter()
    for v, st in samples:
        agg[classify(st)] += v
    print('| area | total | share |' + (' per cycle |' if a.cycles else ''))
    print('|---|---|---|' + ('---|' if a.cycles else ''))
    for k, v in agg.most_common():
        per = f' {1000 * v / a.cycles:.1f} µs |' if a.cycles else ''
        print(f'| {k} | {v:.0f} | {100 * v / total:.1f} % |' + per)
    print(f'| total | {total:.0f} | 100 % |' + (f' {1000 * total / a.cycles:.1f} µs |' if a.cycles else ''))

if __name__ == '__main__':
    main()
