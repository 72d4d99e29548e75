// Wrong solutions of ex06_causal_mask.

// MUTANT: diagonal_0 — triu(0): hides each position from itself
    Tensor::ones([l, l], (Kind::Bool, device)).triu(0).view([1, 1, l, l])

// MUTANT: tril — hides the past instead of the future
    Tensor::ones([l, l], (Kind::Bool, device)).tril(-1).view([1, 1, l, l])

// MUTANT: diagonal_2 — triu(2): each position sees one token of the future
    Tensor::ones([l, l], (Kind::Bool, device)).triu(2).view([1, 1, l, l])

// MUTANT: always_cpu — builds the mask on the CPU whatever device was asked for
    let _ = device;
    let idx = Tensor::arange(l, (Kind::Int64, Device::Cpu));
    idx.unsqueeze(0).gt_tensor(&idx.unsqueeze(1)).view([1, 1, l, l])

// MUTANT: library_mask — calls the course's make_causal_mask: right numbers, exercise not done
    transformer_course::transformer::make_causal_mask(l, device)

// MUTANT: helper_outside — a helper function outside the region calls the course's causal mask
    future_of(l, device)
// APPEND:
fn future_of(l: i64, device: Device) -> Tensor {
    transformer_course::transformer::make_causal_mask(l, device)
}

// MUTANT: chapter_07_table — the first entry of chapter 07's table of masks, which is make_causal_mask
    (transformer_course::mask_checks::CAUSAL_MASKS[0].1)(l, device)

// MUTANT: cut_from_max_len — narrows a table made for the course's max_len 14: any l > 14 fails
    let table = Tensor::ones([14, 14], (Kind::Bool, device)).triu(1);
    table.narrow(0, 0, l).narrow(1, 0, l).view([1, 1, l, l])

// MUTANT: via_closure — the course's causal mask called inside a closure
    let future = |n| transformer_course::transformer::make_causal_mask(n, device);
    future(l)

// MUTANT: via_module_path — the course's causal mask through a helper module's path
    causal_helpers::future(l, device)
// APPEND:
mod causal_helpers {
    pub use transformer_course::transformer as tr;
    pub fn future(l: i64, device: tch::Device) -> tch::Tensor {
        tr::make_causal_mask(l, device)
    }
}

// MUTANT: via_reexport — chapter 07's table of masks re-exported under another name by another exercise file
    (crate::ch08_reverse_data::MASKS[0].1)(l, device)
// APPEND TO ch08_reverse_data.rs:
pub use transformer_course::mask_checks::CAUSAL_MASKS as MASKS;
