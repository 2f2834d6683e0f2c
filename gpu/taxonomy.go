package gpu

import "strings"

// Collective describes what an NCCL/RCCL kernel name says about the
// collective it runs. Empty fields are unknown.
type Collective struct {
	Name     string // allreduce, allgather, reducescatter, broadcast, reduce, alltoall, sendrecv, send, recv
	Algo     string // RING, TREE, COLLNET_DIRECT, COLLNET_CHAIN, NVLS, NVLS_TREE, PAT
	Protocol string // LL, LL128, SIMPLE
}

// IsCollectiveKernel reports whether a GPU kernel name is an NCCL or RCCL
// kernel (communication rather than computation).
func IsCollectiveKernel(name string) bool {
	if len(name) < 4 {
		return false
	}
	return hasPrefixFold(name, "nccl") || hasPrefixFold(name, "rccl") ||
		strings.Contains(name, "nccl") || strings.Contains(name, "NCCL") ||
		strings.Contains(name, "rccl") || strings.Contains(name, "RCCL")
}

func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

var collectiveNames = map[string]string{
	"allreduce":     "allreduce",
	"allgather":     "allgather",
	"reducescatter": "reducescatter",
	"broadcast":     "broadcast",
	"reduce":        "reduce",
	"alltoall":      "alltoall",
	"sendrecv":      "sendrecv",
	"send":          "send",
	"recv":          "recv",
}

var algos = map[string]bool{"RING": true, "TREE": true, "COLLNET": true, "COLLNETDIRECT": true,
	"COLLNETCHAIN": true, "NVLS": true, "NVLSTREE": true, "PAT": true}

var protos = map[string]bool{"LL": true, "LL128": true, "SIMPLE": true}

// ParseCollectiveKernel reads the collective, algorithm and protocol from an
// NCCL kernel name such as "ncclKernel_AllReduce_RING_LL_Sum_float(...)" or
// "ncclDevKernel_AllGather_RING_LL(...)". Names that do not say (RCCL's
// ncclDevKernel_Generic) give an empty Collective.
func ParseCollectiveKernel(name string) Collective {
	var c Collective
	if i := strings.IndexByte(name, '('); i >= 0 {
		name = name[:i]
	}
	parts := strings.Split(name, "_")
	if len(parts) < 2 {
		return c
	}
	for i, p := range parts[1:] {
		up := strings.ToUpper(strings.ReplaceAll(p, "-", ""))
		switch {
		case i == 0:
			c.Name = collectiveNames[strings.ToLower(p)]
		case c.Algo == "" && algos[up]:
			c.Algo = up
		case c.Protocol == "" && protos[up]:
			c.Protocol = up
		}
	}
	return c
}

// collectiveSeparators is built once: a Replacer builds its tables on
// first use, and building one per call cost 6 KB each time (424 MB for the
// collectives of a 1.5 GB trace).
var collectiveSeparators = strings.NewReplacer("_", "", "-", "", " ", "")

// NormalizeCollective maps the spellings seen in Kineto args and c10d
// ("all_reduce", "allreduce", "_allgather_base", "reduce_scatter_tensor_coalesced")
// to the short names ParseCollectiveKernel uses.
func NormalizeCollective(s string) string {
	k := strings.ToLower(collectiveSeparators.Replace(s))
	switch {
	case strings.Contains(k, "allreduce"):
		return "allreduce"
	case strings.Contains(k, "allgather"):
		return "allgather"
	case strings.Contains(k, "reducescatter"):
		return "reducescatter"
	case strings.Contains(k, "alltoall"):
		return "alltoall"
	case strings.Contains(k, "broadcast"):
		return "broadcast"
	case strings.Contains(k, "sendrecv"):
		return "sendrecv"
	case strings.Contains(k, "barrier"):
		return "barrier"
	case strings.Contains(k, "reduce"):
		return "reduce"
	case strings.Contains(k, "send"):
		return "send"
	case strings.Contains(k, "recv"):
		return "recv"
	case strings.Contains(k, "gather"):
		return "gather"
	case strings.Contains(k, "scatter"):
		return "scatter"
	}
	return k
}

// Copy describes a memcpy or memset activity name such as
// "Memcpy HtoD (Pinned -> Device)".
type Copy struct {
	Kind    string // HtoD, DtoH, DtoD, PtoP, HtoH; "" for memset
	HostMem string // pinned, pageable, or "" when no host memory is involved or it is not said
}

// ParseCopy reads a CUPTI/roctracer memcpy or memset name.
func ParseCopy(name string) Copy {
	var c Copy
	for _, k := range []string{"HtoD", "DtoH", "DtoD", "PtoP", "HtoH", "DtoA", "AtoD", "AtoH", "HtoA", "AtoA"} {
		if strings.Contains(name, k) {
			c.Kind = k
			break
		}
	}
	switch {
	case strings.Contains(name, "Pageable"):
		c.HostMem = "pageable"
	case strings.Contains(name, "Pinned"):
		c.HostMem = "pinned"
	}
	return c
}
