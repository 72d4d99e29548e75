// Wrong solutions of ex03_swiglu.

// MUTANT: gate_swapped — silu on the second half: the gate and the value swapped
        let halves = x.apply(&self.lin_in).chunk(2, -1);
        (halves[1].silu() * &halves[0]).apply(&self.lin_out)

// MUTANT: sigmoid_gate — σ(gate) instead of silu(gate) = gate·σ(gate): GLU, not SwiGLU
        let halves = x.apply(&self.lin_in).chunk(2, -1);
        (halves[0].sigmoid() * &halves[1]).apply(&self.lin_out)

// MUTANT: interleaved — splits the features alternately (even = gate, odd = value)
        let h = x.apply(&self.lin_in);
        let (b, l, _) = h.size3().unwrap();
        let pairs = h.view([b, l, self.hidden, 2]);
        (pairs.select(3, 0).silu() * pairs.select(3, 1)).apply(&self.lin_out)

// MUTANT: gelu_gate — GELU on the gate instead of SiLU (GEGLU, not SwiGLU)
        let halves = x.apply(&self.lin_in).chunk(2, -1);
        (halves[0].gelu("none") * &halves[1]).apply(&self.lin_out)

// MUTANT: gate_times_itself — silu(gate) times the gate: the value half is never used
        let halves = x.apply(&self.lin_in).chunk(2, -1);
        (halves[0].silu() * &halves[0]).apply(&self.lin_out)

// MUTANT: weights_without_bias — x·W_inᵀ without lin_in's bias
        let h = x.matmul(&self.lin_in.ws.tr());
        let halves = h.chunk(2, -1);
        (halves[0].silu() * &halves[1]).apply(&self.lin_out)
