package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
)

// The capacity model (docs/capacity.md): sizing from the per-cycle costs
// of a CapacityReport. Its tables are printed as markdown, and the page's
// tables are these, between <!-- capacity:NAME --> and
// <!-- /capacity:NAME --> markers, so that the page is regenerated from
// (and checked against) the committed measurement.

// Sizing targets: a gateway's cores are sized to run at most this busy,
// and a Redis master's one core at most this busy (headroom for a
// failover's reconnects, a reshard and the background work of its event
// loop).
const (
	gatewayTargetUtil = 0.6
	redisTargetUtil   = 0.5
	gatewayCores      = 4 // cores of one gateway host in the sizing table
)

// mixShare is the typical mix of the sizing table: lock cycles, user-lock
// attempts, and cycles that wait (priced as a hand-off of a contended
// name, the dearest kind of lock cycle).
var mixShare = []struct {
	phase string
	share float64
}{{"lock", 0.6}, {"userlock", 0.3}, {"handoff", 0.1}}

// Assumptions of the sizing table's memory: a lock is held for holdSec
// on average (held locks = rate x holdSec, Little's law); waitSec is the
// mean wait of a cycle that waits; streams event streams are open;
// namesPerHeld distinct names are released within the fence retention
// (24 h by default) for each one held at a time, each keeping a
// tombstone of tombstoneBytes (docs/keys.md).
const (
	holdSec        = 1.0
	waitSec        = 0.5
	streams        = 1000
	namesPerHeld   = 100
	tombstoneBytes = 181.3
)

// ReadCapacity reads a `-capacity -json` report of this tooling.
func ReadCapacity(path string) (*CapacityReport, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var rep Report
	if err := json.Unmarshal(data, &rep); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if rep.Capacity == nil || len(rep.Capacity.Topologies) == 0 {
		return nil, fmt.Errorf("%s: not a -capacity report", path)
	}
	return rep.Capacity, nil
}

// Print writes the report as the markdown tables of docs/capacity.md.
func (r *CapacityReport) Print(w io.Writer) {
	for _, s := range r.Sections() {
		fmt.Fprintf(w, "%s\n", s.Text)
	}
}

// Section is one generated table of docs/capacity.md.
type Section struct{ Name, Text string }

// Sections are the page's generated parts, in order.
func (r *CapacityReport) Sections() []Section {
	return []Section{
		{"conditions", r.conditions()},
		{"costs", r.costTable()},
		{"memory", r.memoryTable()},
		{"inputs", r.inputsTable()},
		{"sizing", r.sizingTable()},
		{"predicted", r.predictedTable()},
	}
}

// UpdateDoc replaces each section's text between its markers in doc; an
// error names a section whose markers are missing.
func (r *CapacityReport) UpdateDoc(doc string) (string, error) {
	for _, s := range r.Sections() {
		open, end := "<!-- capacity:"+s.Name+" -->\n", "<!-- /capacity:"+s.Name+" -->"
		i := strings.Index(doc, open)
		j := strings.Index(doc, end)
		if i < 0 || j < i {
			return "", fmt.Errorf("capacity doc: no %q ... %q", strings.TrimSpace(open), end)
		}
		doc = doc[:i+len(open)] + s.Text + doc[j:]
	}
	return doc, nil
}

func (r *CapacityReport) conditions() string {
	return fmt.Sprintf("Measured with %s, redis-server %s, %d CPUs shared with other work (load average %.1f at the start, %.1f at the end), %d clients, %d round(s) of %.0f s per phase, median shown.\n",
		r.GoVersion, r.RedisVersion, r.NumCPU, r.LoadAvg[0], r.LoadAvg[1], r.Concurrency, r.Rounds, r.Seconds)
}

func (t *CapacityTopo) phase(name string) *CostPhase {
	for i := range t.Phases {
		if t.Phases[i].Name == name {
			return &t.Phases[i]
		}
	}
	return nil
}

func (r *CapacityReport) costTable() string {
	var b strings.Builder
	b.WriteString("| topology | phase | cycles/s | gateway µs | Redis µs | busiest node µs | load generator µs | HTTP B | Redis B | Redis commands | MOVED |\n")
	b.WriteString("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, t := range r.Topologies {
		for _, p := range t.Phases {
			var calls float64
			for _, n := range p.RedisCalls {
				calls += n
			}
			fmt.Fprintf(&b, "| %s | %s | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %.1f | %.2f |\n",
				t.Name, p.Name, p.CyclesPerSec, p.GatewayCPUus, p.RedisCPUus, p.RedisMaxCPUus, p.DriverCPUus, p.HTTPBytes, p.RedisBytes, calls, p.Moved)
		}
	}
	return b.String()
}

func (r *CapacityReport) memoryTable() string {
	var b strings.Builder
	b.WriteString("| topology | held locks | Redis B per held lock | waiters | Redis B per waiter | gateway RSS per waiter | event streams | Redis B per stream | gateway RSS per stream |\n")
	b.WriteString("|---|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, t := range r.Topologies {
		m := t.Memory
		fmt.Fprintf(&b, "| %s | %d | %.0f | %d | %.0f | %.1f KiB | %d | %.0f | %.1f KiB |\n", t.Name, m.Held, m.RedisPerLock, m.Waiters,
			m.RedisPerWaiter, m.GatewayRSSPerWaiter/1024, m.Streams, m.RedisPerStream, m.GatewayRSSPerStream/1024)
	}
	return b.String()
}

// base is the topology whose costs the model takes for t: the first
// batched one measured of its kind, g1 for one Redis, c1 for a Cluster.
func (r *CapacityReport) base(t Topology) *CapacityTopo {
	for i := range r.Topologies {
		if b := &r.Topologies[i]; b.Cluster == t.Cluster && !b.Unbatched {
			return b
		}
	}
	return nil
}

// unbatched is u1, the gateway without auto-pipelining; nil when not
// measured.
func (r *CapacityReport) unbatched() *CapacityTopo {
	for i := range r.Topologies {
		if r.Topologies[i].Unbatched {
			return &r.Topologies[i]
		}
	}
	return nil
}

// batchLaw is a CPU cost per cycle as a line in Redis's socket reads per
// cycle: u + p*reads. A pipeline of n script calls is one read (and one
// write, one wake-up) on both sides, so each read costs p whatever it
// carries, and the rest, u, is the work of the cycle itself. Two points
// fix it: the batched base (deep pipelines, few reads) and u1 (one read
// per call).
type batchLaw struct{ u, p float64 }

func fitBatchLaw(c, reads, cu, readsU float64) batchLaw {
	if readsU <= reads {
		return batchLaw{u: c}
	}
	p := max(0, (cu-c)/(readsU-reads))
	return batchLaw{u: c - p*reads, p: p}
}

func (l batchLaw) at(reads float64) float64 { return l.u + l.p*reads }

// Prediction is the model's figure for one measured point.
type Prediction struct {
	Topology, Phase       string
	Input                 bool    // the point is one of the model's inputs
	Measured, Predicted   float64 // cycles/s
	MeasuredCPU, ModelCPU float64 // gateway + Redis µs per cycle
}

// Predictions: for every measured point, the model's server CPU per
// cycle and cycles/s, from the inputs g1 (or c1 for a Cluster) and u1
// alone. A fleet of g gateways on m masters splits the load over g*m
// pipelines, each 1/(g*m) as deep as the base's, so Redis reads per
// cycle are the base's times g*m (at most u1's, one per call); the CPU
// per cycle follows from the batch law. The cycles/s are the cores the
// rest of the machine left free divided by the CPU of a cycle (every
// process of the run shares this machine's cores), capped by the busiest
// master's one core; a hand-off's are the base's divided by the fan-out
// (one name is one key on one master whatever the fleet, and its
// hand-offs run one after the other).
func (r *CapacityReport) Predictions() []Prediction {
	var out []Prediction
	unb := r.unbatched()
	for _, t := range r.Topologies {
		base := r.base(t.Topology)
		if base == nil {
			continue
		}
		k := float64(t.Gateways*t.Masters) / float64(base.Gateways*base.Masters)
		for _, p := range t.Phases {
			bp := base.phase(p.Name)
			if bp == nil {
				continue
			}
			gw, rd := batchLaw{u: bp.GatewayCPUus}, batchLaw{u: bp.RedisCPUus}
			reads := bp.RedisReads * k
			var up *CostPhase
			if unb != nil {
				up = unb.phase(p.Name)
			}
			if up != nil {
				gw = fitBatchLaw(bp.GatewayCPUus, bp.RedisReads, up.GatewayCPUus, up.RedisReads)
				rd = fitBatchLaw(bp.RedisCPUus, bp.RedisReads, up.RedisCPUus, up.RedisReads)
				reads = min(reads, up.RedisReads)
				if t.Unbatched {
					reads = up.RedisReads
				}
			}
			pr := Prediction{Topology: t.Name, Phase: p.Name, Input: t.Name == base.Name || t.Unbatched,
				Measured: p.CyclesPerSec, MeasuredCPU: p.GatewayCPUus + p.RedisCPUus, ModelCPU: gw.at(reads) + rd.at(reads)}
			if p.Name == "handoff" {
				pr.ModelCPU *= fanOut(bp, t.Gateways)
				pr.Predicted = bp.CyclesPerSec / fanOut(bp, t.Gateways)
			} else {
				perCycle := pr.ModelCPU + bp.DriverCPUus
				free := float64(r.NumCPU) - p.OtherCores
				pr.Predicted = 1e6 * free / perCycle
				// One master's core, with the load spread over t's masters.
				if busiest := rd.at(reads) * bp.RedisMaxCPUus / max(bp.RedisCPUus, 1e-9) * float64(base.Masters) / float64(t.Masters); busiest > 0 {
					pr.Predicted = math.Min(pr.Predicted, 1e6/busiest)
				}
			}
			out = append(out, pr)
		}
	}
	return out
}

// fanOut is how much more a hand-off costs when its waiters sit on
// gateways of their own: a release wakes the head of the name's queue on
// every gateway that has waiters, and each head tries once, one script
// call more per gateway beyond the first (the winner's grant is the
// base's). The base's script calls per hand-off count the rest.
func fanOut(base *CostPhase, gateways int) float64 {
	calls := base.RedisCalls["evalsha"] + base.RedisCalls["eval"]
	if calls <= 0 || gateways <= 1 {
		return 1
	}
	return (calls + float64(gateways-1)) / calls
}

func pct(pred, meas float64) float64 {
	if meas == 0 {
		return 0
	}
	return 100 * (pred - meas) / meas
}

func (r *CapacityReport) predictedTable() string {
	var b strings.Builder
	b.WriteString("| topology | phase | measured cycles/s | predicted | error | measured server µs | predicted | error |\n")
	b.WriteString("|---|---|--:|--:|--:|--:|--:|--:|\n")
	input := map[bool]string{true: " (input)"}
	preds := r.Predictions()
	for _, p := range preds {
		mark := func(e float64) string {
			s := fmt.Sprintf("%+.0f %%", e)
			if math.Abs(e) > 20 {
				s += " **miss**"
			}
			return s
		}
		fmt.Fprintf(&b, "| %s%s | %s | %.0f | %.0f | %s | %.0f | %.0f | %s |\n", p.Topology, input[p.Input], p.Phase,
			p.Measured, p.Predicted, mark(pct(p.Predicted, p.Measured)), p.MeasuredCPU, p.ModelCPU, mark(pct(p.ModelCPU, p.MeasuredCPU)))
	}
	var n, rate, cpu int
	for _, p := range preds {
		if p.Input {
			continue
		}
		n++
		if math.Abs(pct(p.Predicted, p.Measured)) <= 20 {
			rate++
		}
		if math.Abs(pct(p.ModelCPU, p.MeasuredCPU)) <= 20 {
			cpu++
		}
	}
	fmt.Fprintf(&b, "\nOf the %d points that are not inputs, the model is within ±20 %% of the CPU per cycle at %d and of the cycles/s at %d.\n", n, cpu, rate)
	return b.String()
}

// mix is the per-cycle cost of the typical mix.
type mix struct {
	gatewayUs, redisUs, httpB, redisB float64
}

// mixOf is the typical mix's cost per cycle: CPU from cpu, bytes on the
// wire from wire.
func mixOf(cpu, wire *CapacityTopo) mix {
	var m mix
	for _, s := range mixShare {
		if p := cpu.phase(s.phase); p != nil {
			m.gatewayUs += s.share * p.GatewayCPUus
			m.redisUs += s.share * p.RedisCPUus
		}
		if p := wire.phase(s.phase); p != nil {
			m.httpB += s.share * p.HTTPBytes
			m.redisB += s.share * p.RedisBytes
		}
	}
	return m
}

// Sizing is the model's fleet for a rate of the typical mix.
type Sizing struct {
	Rate                float64
	GatewayCores        float64
	Gateways            int // hosts of gatewayCores, one spare included
	RedisCores          float64
	Masters             int
	HeldLocks, Waiters  float64
	Tombstones          float64 // released names within the retention
	RedisMiB            float64
	GatewayMiB          float64 // waiters' and streams' RSS, all gateways
	HTTPMbit, RedisMbit float64
}

// sizingCosts are the CPU costs per cycle the sizing uses: u1's,
// unbatched (a large fleet spreads its calls over gateways x masters
// pipelines, each of them shallow; batching only lowers it), times what
// a Cluster costs more than one Redis (c1 over g1, phase by phase: the
// lock index's second step, per-slot scripts), since a fleet that large
// runs on a Cluster.
func (r *CapacityReport) sizingCosts() *CapacityTopo {
	u, c, g := r.unbatched(), r.base(Topology{Cluster: true}), r.base(Topology{})
	if u == nil {
		u = &r.Topologies[0]
	}
	out := &CapacityTopo{Topology: u.Topology}
	for _, p := range u.Phases {
		q := p
		if c != nil && g != nil {
			if cp, gp := c.phase(p.Name), g.phase(p.Name); cp != nil && gp != nil && gp.GatewayCPUus > 0 && gp.RedisCPUus > 0 {
				q.GatewayCPUus *= cp.GatewayCPUus / gp.GatewayCPUus
				q.RedisCPUus *= cp.RedisCPUus / gp.RedisCPUus
			}
		}
		out.Phases = append(out.Phases, q)
	}
	return out
}

// inputsTable: the costs per cycle the sizing uses, and the mix's.
func (r *CapacityReport) inputsTable() string {
	wire, costs := r.wire(), r.sizingCosts()
	var b strings.Builder
	b.WriteString("| phase | share of the mix | gateway µs | Redis µs | HTTP B | Redis B |\n")
	b.WriteString("|---|--:|--:|--:|--:|--:|\n")
	share := map[string]float64{}
	for _, s := range mixShare {
		share[s.phase] = s.share
	}
	for _, p := range costs.Phases {
		var h, rb float64
		if w := wire.phase(p.Name); w != nil {
			h, rb = w.HTTPBytes, w.RedisBytes
		}
		fmt.Fprintf(&b, "| %s | %.0f %% | %.0f | %.0f | %.0f | %.0f |\n", p.Name, 100*share[p.Name], p.GatewayCPUus, p.RedisCPUus, h, rb)
	}
	m := mixOf(costs, wire)
	fmt.Fprintf(&b, "| **the mix** | 100 %% | %.0f | %.0f | %.0f | %.0f |\n", m.gatewayUs, m.redisUs, m.httpB, m.redisB)
	mem := r.largestMemory()
	fmt.Fprintf(&b, "\nMemory (the largest of the fleets): Redis %.0f B per held lock, %.0f B per waiter, %.0f B per event stream; gateway RSS %.1f KiB per waiter, %.1f KiB per stream.\n",
		mem.RedisPerLock, mem.RedisPerWaiter, mem.RedisPerStream, mem.GatewayRSSPerWaiter/1024, mem.GatewayRSSPerStream/1024)
	return b.String()
}

// wire is the topology whose bytes on the wire the sizing takes: c1, a
// Cluster's, when it was measured, else the first topology.
func (r *CapacityReport) wire() *CapacityTopo {
	if t := r.base(Topology{Cluster: true}); t != nil {
		return t
	}
	return &r.Topologies[0]
}

// Size is the fleet for rate cycles/s of the typical mix, at the CPU
// costs of sizingCosts and the bytes of wire; memory is largestMemory's.
func (r *CapacityReport) Size(rate float64) Sizing {
	m := mixOf(r.sizingCosts(), r.wire())
	s := Sizing{Rate: rate}
	s.GatewayCores = rate * m.gatewayUs / 1e6 / gatewayTargetUtil
	s.Gateways = int(math.Ceil(s.GatewayCores/gatewayCores)) + 1
	s.RedisCores = rate * m.redisUs / 1e6
	s.Masters = max(1, int(math.Ceil(s.RedisCores/redisTargetUtil)))
	s.HeldLocks = rate * holdSec
	s.Waiters = rate * 0.1 * waitSec
	mem := r.largestMemory()
	s.Tombstones = s.HeldLocks * namesPerHeld
	s.RedisMiB = (s.HeldLocks*mem.RedisPerLock + s.Waiters*mem.RedisPerWaiter + streams*mem.RedisPerStream + s.Tombstones*tombstoneBytes) / (1 << 20)
	s.GatewayMiB = (s.Waiters*mem.GatewayRSSPerWaiter + streams*mem.GatewayRSSPerStream) / (1 << 20)
	s.HTTPMbit = rate * m.httpB * 8 / 1e6
	s.RedisMbit = rate * m.redisB * 8 / 1e6
	return s
}

// largestMemory is each memory figure's largest over the fleets: the
// small counts of the measurement (200 waiters) leave much of a
// gateway's RSS growth unseen, so the sizing takes the worst.
func (r *CapacityReport) largestMemory() MemoryCost {
	var m MemoryCost
	for _, t := range r.Topologies {
		x := t.Memory
		m.RedisPerLock = max(m.RedisPerLock, x.RedisPerLock)
		m.RedisPerWaiter = max(m.RedisPerWaiter, x.RedisPerWaiter)
		m.RedisPerStream = max(m.RedisPerStream, x.RedisPerStream)
		m.GatewayRSSPerWaiter = max(m.GatewayRSSPerWaiter, x.GatewayRSSPerWaiter)
		m.GatewayRSSPerStream = max(m.GatewayRSSPerStream, x.GatewayRSSPerStream)
	}
	return m
}

func (r *CapacityReport) sizingTable() string {
	var b strings.Builder
	b.WriteString("| lock cycles/s | gateway cores | gateways (4 cores, +1 spare) | Redis cores | masters | held locks | waiters | names in the retention | Redis memory | gateway memory for waiters and streams | client↔gateway | gateway↔Redis |\n")
	b.WriteString("|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, rate := range []float64{1e4, 1e5, 1e6} {
		s := r.Size(rate)
		fmt.Fprintf(&b, "| %s | %.1f | %d | %.1f | %d | %s | %s | %s | %s | %.0f MiB | %.0f Mbit/s | %.0f Mbit/s |\n",
			count(rate), s.GatewayCores, s.Gateways, s.RedisCores, s.Masters, count(s.HeldLocks), count(s.Waiters), count(s.Tombstones),
			mib(s.RedisMiB), math.Max(1, s.GatewayMiB), s.HTTPMbit, s.RedisMbit)
	}
	return b.String()
}

// mib writes a size in MiB, or GiB from 10 GiB on.
func mib(m float64) string {
	if m >= 10<<10 {
		return fmt.Sprintf("%.0f GiB", m/(1<<10))
	}
	return fmt.Sprintf("%.0f MiB", math.Max(1, m))
}

// count writes 10000 as "10 k", 1e6 as "1 M".
func count(n float64) string {
	switch {
	case n >= 1e6:
		return fmt.Sprintf("%g M", n/1e6)
	case n >= 1e3:
		return fmt.Sprintf("%g k", n/1e3)
	}
	return fmt.Sprintf("%.0f", n)
}
