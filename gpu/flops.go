package gpu

import (
	"encoding/json"
	"strings"
)

// FLOPs of PyTorch operators from their input shapes, as a trace recorded
// with record_shapes=True gives them ("Input Dims", "Input type"). Only
// leaf operators are counted (aten::mm, not the aten::matmul or
// aten::linear that calls it), so that a model's FLOPs are the sum over
// its operators without double counting; backward matmuls are aten::mm
// calls of their own and count the same way.

// FlopOp says which formula an operator name takes; "" for none.
func FlopOp(name string) string {
	switch name {
	case "aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::_scaled_mm":
		return strings.TrimPrefix(name, "aten::")
	case "aten::_scaled_dot_product_flash_attention", "aten::_scaled_dot_product_efficient_attention",
		"aten::_scaled_dot_product_cudnn_attention":
		return "sdpa"
	case "aten::_scaled_dot_product_flash_attention_backward", "aten::_scaled_dot_product_efficient_attention_backward",
		"aten::_scaled_dot_product_cudnn_attention_backward":
		return "sdpa_backward"
	}
	return ""
}

// OpFlops computes an operator's floating-point operations (a multiply and
// an add count two) from its "Input Dims" and "Input type" JSON, and the
// dtype the work ran in (bf16, fp16, fp32, fp8; "" when unknown). It
// returns 0 when the shapes do not fit the operator.
//
// Attention counts both matmuls (Q·Kᵀ and P·V: 4·B·H·L·S·D) without the
// causal mask's saving, an upper bound; its backward counts 2.5 times
// that (five matmuls, the forward's two recomputed).
func OpFlops(op string, dimsJSON, typesJSON []byte) (int64, string) {
	var dims [][]int64
	if json.Unmarshal(dimsJSON, &dims) != nil {
		return 0, ""
	}
	var types []string
	_ = json.Unmarshal(typesJSON, &types)
	at := func(i int) []int64 {
		if i < len(dims) {
			return dims[i]
		}
		return nil
	}
	typ := func(i int) string {
		if i < len(types) {
			return dtypeOf(types[i])
		}
		return ""
	}
	switch op {
	case "mm", "_scaled_mm":
		a, b := at(0), at(1)
		if len(a) == 2 && len(b) == 2 && a[1] == b[0] {
			dt := typ(0)
			if op == "_scaled_mm" {
				dt = "fp8"
			}
			return 2 * a[0] * a[1] * b[1], dt
		}
	case "addmm":
		a, b := at(1), at(2)
		if len(a) == 2 && len(b) == 2 && a[1] == b[0] {
			return 2 * a[0] * a[1] * b[1], typ(1)
		}
	case "bmm":
		a, b := at(0), at(1)
		if len(a) == 3 && len(b) == 3 && a[0] == b[0] && a[2] == b[1] {
			return 2 * a[0] * a[1] * a[2] * b[2], typ(0)
		}
	case "baddbmm":
		a, b := at(1), at(2)
		if len(a) == 3 && len(b) == 3 && a[0] == b[0] && a[2] == b[1] {
			return 2 * a[0] * a[1] * a[2] * b[2], typ(1)
		}
	case "sdpa":
		q, k := at(0), at(1)
		if len(q) == 4 && len(k) == 4 {
			return 4 * q[0] * q[1] * q[2] * k[2] * q[3], typ(0)
		}
	case "sdpa_backward":
		q, k := at(1), at(2)
		if len(q) == 4 && len(k) == 4 {
			return 10 * q[0] * q[1] * q[2] * k[2] * q[3], typ(1)
		}
	}
	return 0, ""
}

// dtypeOf maps a PyTorch scalar type name to the catalog's dtype names.
func dtypeOf(t string) string {
	switch strings.TrimPrefix(t, "c10::") {
	case "BFloat16":
		return "bf16"
	case "Half":
		return "fp16"
	case "float", "Float":
		return "fp32"
	case "Float8_e4m3fn", "Float8_e5m2", "Float8_e4m3fnuz", "Float8_e5m2fnuz":
		return "fp8"
	}
	return ""
}
