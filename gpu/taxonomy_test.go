package gpu

import "testing"

func TestParseCollectiveKernel(t *testing.T) {
	cases := []struct {
		name string
		want Collective
		comm bool
	}{
		{"ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)", Collective{"allreduce", "RING", "LL"}, true},
		{"ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)", Collective{"sendrecv", "RING", "SIMPLE"}, true},
		{"ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)", Collective{"allgather", "RING", "LL"}, true},
		{"ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL128", Collective{"reducescatter", "RING", "LL128"}, true},
		{"ncclDevKernel_AllReduce_Sum_f32_TREE_LL", Collective{"allreduce", "TREE", "LL"}, true},
		{"ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)", Collective{"sendrecv", "", ""}, true},
		{"ncclDevKernel_Generic(ncclDevKernelArgsStorage<4096ul>)", Collective{}, true},
		{"ncclKernel_Broadcast_RING_LL_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)", Collective{"broadcast", "RING", "LL"}, true},
		{"void at::native::vectorized_elementwise_kernel<4>", Collective{}, false},
		{"sm90_xmma_gemm_bf16bf16_bf16f32", Collective{}, false},
	}
	for _, c := range cases {
		if got := IsCollectiveKernel(c.name); got != c.comm {
			t.Errorf("IsCollectiveKernel(%q) = %v", c.name, got)
		}
		if !c.comm {
			continue
		}
		if got := ParseCollectiveKernel(c.name); got != c.want {
			t.Errorf("ParseCollectiveKernel(%q) = %+v, want %+v", c.name, got, c.want)
		}
	}
}

func TestNormalizeCollective(t *testing.T) {
	for in, want := range map[string]string{
		"allreduce": "allreduce", "all_reduce": "allreduce", "_allgather_base": "allgather",
		"reduce_scatter_tensor_coalesced": "reducescatter", "all_to_allv": "alltoall", "broadcast": "broadcast",
		"send": "send", "recv": "recv", "barrier": "barrier", "reduce": "reduce", "gather": "gather",
	} {
		if got := NormalizeCollective(in); got != want {
			t.Errorf("NormalizeCollective(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestParseCopy(t *testing.T) {
	for in, want := range map[string]Copy{
		"Memcpy HtoD (Pinned -> Device)":   {"HtoD", "pinned"},
		"Memcpy DtoH (Device -> Pageable)": {"DtoH", "pageable"},
		"Memcpy DtoD (Device -> Device)":   {"DtoD", ""},
		"Memcpy PtoP (Device -> Device)":   {"PtoP", ""},
		"Memset (Device)":                  {"", ""},
	} {
		if got := ParseCopy(in); got != want {
			t.Errorf("ParseCopy(%q) = %+v, want %+v", in, got, want)
		}
	}
}
