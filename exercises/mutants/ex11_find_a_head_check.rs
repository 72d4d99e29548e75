// Wrong solutions of ex11_find_a_head_check.

// MUTANT: swapped — counts the rows right only with the head off as only_on
    let on = correct_rows(model, src, tgt, 500);
    let mha = attention_module(model, found.kind, found.layer);
    let off = with_head_off(mha, found.head, || correct_rows(model, src, tgt, 500));
    let only_on = on.iter().zip(&off).filter(|(a, b)| !**a && **b).count();
    let only_off = on.iter().zip(&off).filter(|(a, b)| **a && !**b).count();
    HeadCheck { only_on, only_off, p: sign_test_p_value(only_on, only_off) }

// MUTANT: next_head — switches off the head after the one found
    let on = correct_rows(model, src, tgt, 500);
    let mha = attention_module(model, found.kind, found.layer);
    let h = (found.head + 1) % mha.h;
    let off = with_head_off(mha, h, || correct_rows(model, src, tgt, 500));
    let only_on = on.iter().zip(&off).filter(|(a, b)| **a && !**b).count();
    let only_off = on.iter().zip(&off).filter(|(a, b)| !**a && **b).count();
    HeadCheck { only_on, only_off, p: sign_test_p_value(only_on, only_off) }

// MUTANT: cross — switches off the head in the layer's cross-attention
    let on = correct_rows(model, src, tgt, 500);
    let mha = attention_module(model, AttentionKind::Cross, found.layer);
    let off = with_head_off(mha, found.head, || correct_rows(model, src, tgt, 500));
    let only_on = on.iter().zip(&off).filter(|(a, b)| **a && !**b).count();
    let only_off = on.iter().zip(&off).filter(|(a, b)| !**a && **b).count();
    HeadCheck { only_on, only_off, p: sign_test_p_value(only_on, only_off) }

// MUTANT: unpaired — compares the two runs as independent rates (Fisher) instead of pairs
    let on = correct_rows(model, src, tgt, 500);
    let mha = attention_module(model, found.kind, found.layer);
    let off = with_head_off(mha, found.head, || correct_rows(model, src, tgt, 500));
    let only_on = on.iter().zip(&off).filter(|(a, b)| **a && !**b).count();
    let only_off = on.iter().zip(&off).filter(|(a, b)| !**a && **b).count();
    let n = on.len();
    let miss = |v: &[bool]| v.iter().filter(|&&r| !r).count();
    let p = transformer_course::generate::two_rates_p_value((miss(&on), n), (miss(&off), n));
    HeadCheck { only_on, only_off, p }

// MUTANT: left_off — never puts the head back on
    let on = correct_rows(model, src, tgt, 500);
    let mha = attention_module(model, found.kind, found.layer);
    let _ = tch::no_grad(|| mha.W_o.ws.narrow(1, found.head * mha.d_k, mha.d_k).zero_());
    let off = correct_rows(model, src, tgt, 500);
    let only_on = on.iter().zip(&off).filter(|(a, b)| **a && !**b).count();
    let only_off = on.iter().zip(&off).filter(|(a, b)| !**a && **b).count();
    HeadCheck { only_on, only_off, p: sign_test_p_value(only_on, only_off) }

// MUTANT: kind_ignored — always switches the head off in the decoder's self-attention, whatever kind was found
    let on = correct_rows(model, src, tgt, 500);
    let mha = attention_module(model, AttentionKind::DecoderSelf, found.layer);
    let off = with_head_off(mha, found.head, || correct_rows(model, src, tgt, 500));
    let only_on = on.iter().zip(&off).filter(|(a, b)| **a && !**b).count();
    let only_off = on.iter().zip(&off).filter(|(a, b)| !**a && **b).count();
    HeadCheck {
        only_on,
        only_off,
        p: sign_test_p_value(only_on, only_off),
    }
