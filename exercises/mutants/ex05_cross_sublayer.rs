// Wrong solutions of ex05_cross_sublayer.

// MUTANT: normalised_memory — runs the memory through ln2 as well
    let h = x.apply(&layer.ln2);
    let m = memory.apply(&layer.ln2);
    let (a, w) = layer.cross_mha.forward(&h, &m, &m, Some(cross_mask), false);
    (x + a, w)

// MUTANT: no_residual — returns the attention output without adding x
    let h = x.apply(&layer.ln2);
    layer.cross_mha.forward(&h, memory, memory, Some(cross_mask), false)

// MUTANT: ln1 — normalises the queries with ln1 (the self-attention's LayerNorm)
    let h = x.apply(&layer.ln1);
    let (a, w) = layer.cross_mha.forward(&h, memory, memory, Some(cross_mask), false);
    (x + a, w)

// MUTANT: swapped_roles — queries from the memory, keys and values from x
    let h = x.apply(&layer.ln2);
    let (a, w) = layer.cross_mha.forward(memory, &h, &h, None, false);
    (x + a, w)

// MUTANT: kv_from_x — keys and values from the decoder stream instead of the memory
    let h = x.apply(&layer.ln2);
    let (a, w) = layer.cross_mha.forward(&h, &h, &h, Some(cross_mask), false);
    let _ = memory;
    (x + a, w)

// MUTANT: train_mode — cross_mha.forward(.., true) in a sub-layer the statement runs in inference mode
    let h = x.apply(&layer.ln2);
    let (a, w) = layer.cross_mha.forward(&h, memory, memory, Some(cross_mask), true);
    (x + a, w)
