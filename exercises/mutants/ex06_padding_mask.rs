// Wrong solutions of ex06_padding_mask.

// MUTANT: inverted — true where the key is a real token
    let (b, l) = ids.size2().expect("ids is [B, L]");
    ids.ne(PAD_ID).view([b, 1, 1, l])

// MUTANT: query_axis — masks PAD queries ([B, 1, L, 1]) instead of PAD keys
    let (b, l) = ids.size2().expect("ids is [B, L]");
    ids.eq(PAD_ID).view([b, 1, l, 1])

// MUTANT: zero_one_float — a float 0/1 tensor instead of a bool mask
    let (b, l) = ids.size2().expect("ids is [B, L]");
    ids.eq(PAD_ID).to_kind(Kind::Float).view([b, 1, 1, l])
