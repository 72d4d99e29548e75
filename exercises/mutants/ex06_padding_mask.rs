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

// MUTANT: from_lengths — masks every position past the number of real tokens: right only while PAD sits at the end
    let (b, l) = ids.size2().expect("ids is [B, L]");
    let lengths = ids.ne(PAD_ID).sum_dim_intlist(1, true, Kind::Int64); // [B, 1]
    let pos = Tensor::arange(l, (Kind::Int64, ids.device())).unsqueeze(0);
    pos.ge_tensor(&lengths).view([b, 1, 1, l])

// MUTANT: library_mask — calls the course's make_padding_mask: right numbers, exercise not done
    transformer_course::transformer::make_padding_mask(ids)

// MUTANT: alias_outside — the course's padding mask under another name, imported outside the region
    key_is_pad(ids)
// APPEND:
use transformer_course::transformer::make_padding_mask as key_is_pad;

// MUTANT: via_closure — the course's padding mask called inside a closure
    let mask = |i: &Tensor| transformer_course::transformer::make_padding_mask(i);
    mask(ids)

// MUTANT: via_module_path — the course's padding mask through a helper module's path
    pad_helpers::mask(ids)
// APPEND:
mod pad_helpers {
    pub use transformer_course::transformer as tr;
    pub fn mask(ids: &tch::Tensor) -> tch::Tensor {
        tr::make_padding_mask(ids)
    }
}

// MUTANT: via_reexport — the course's padding mask re-exported under another name by another exercise file
    crate::ch08_reverse_data::pad_keys(ids)
// APPEND TO ch08_reverse_data.rs:
pub use transformer_course::transformer::make_padding_mask as pad_keys;

// MUTANT: four_heads — spells the head dimension out as the course's 4 heads: [B, 4, 1, L]
    let (b, l) = ids.size2().expect("ids is [B, L]");
    ids.eq(PAD_ID).view([b, 1, 1, l]).expand([b, 4, 1, l], false)
