// Wrong solutions of ex14_beam_dates.

// MUTANT: greedy_twice — the "beam" is greedy decoding again, beam_search never called
    let greedy = greedy_decode(model, src, TGT_LEN).to_device(Device::Cpu);
    let mut c = Comparison { greedy_right: 0, beam_right: 0, only_greedy: 0, only_beam: 0, p_value: 1.0 };
    for (i, want) in truth.iter().enumerate() {
        let row = Vec::<i64>::try_from(greedy.get(i as i64)).expect("ids");
        let g = tgt.decode(&row) == *want;
        let _ = width;
        c.greedy_right += usize::from(g);
        c.beam_right += usize::from(g);
    }
    c.p_value = sign_test_p_value(c.only_greedy, c.only_beam);
    c

// MUTANT: width_one — the beam always has width 1, whatever was asked
    let greedy = greedy_decode(model, src, TGT_LEN).to_device(Device::Cpu);
    let mut c = Comparison { greedy_right: 0, beam_right: 0, only_greedy: 0, only_beam: 0, p_value: 1.0 };
    for (i, want) in truth.iter().enumerate() {
        let row = Vec::<i64>::try_from(greedy.get(i as i64)).expect("ids");
        let g = tgt.decode(&row) == *want;
        let (tokens, _) = beam_search(model, &src.narrow(0, i as i64, 1), 1, TGT_LEN);
        let b = tgt.decode(&tokens) == *want;
        let _ = width;
        c.greedy_right += usize::from(g);
        c.beam_right += usize::from(b);
        c.only_greedy += usize::from(g && !b);
        c.only_beam += usize::from(b && !g);
    }
    c.p_value = sign_test_p_value(c.only_greedy, c.only_beam);
    c

// MUTANT: net_difference — the disagreeing rows from the two totals, which hides rows going both ways
    let greedy = greedy_decode(model, src, TGT_LEN).to_device(Device::Cpu);
    let mut c = Comparison { greedy_right: 0, beam_right: 0, only_greedy: 0, only_beam: 0, p_value: 1.0 };
    for (i, want) in truth.iter().enumerate() {
        let row = Vec::<i64>::try_from(greedy.get(i as i64)).expect("ids");
        c.greedy_right += usize::from(tgt.decode(&row) == *want);
        let (tokens, _) = beam_search(model, &src.narrow(0, i as i64, 1), width, TGT_LEN);
        c.beam_right += usize::from(tgt.decode(&tokens) == *want);
    }
    c.only_greedy = c.greedy_right.saturating_sub(c.beam_right);
    c.only_beam = c.beam_right.saturating_sub(c.greedy_right);
    c.p_value = sign_test_p_value(c.only_greedy, c.only_beam);
    c

// MUTANT: unpaired — compares the two rates as if they came from different rows
    let greedy = greedy_decode(model, src, TGT_LEN).to_device(Device::Cpu);
    let mut c = Comparison { greedy_right: 0, beam_right: 0, only_greedy: 0, only_beam: 0, p_value: 1.0 };
    for (i, want) in truth.iter().enumerate() {
        let row = Vec::<i64>::try_from(greedy.get(i as i64)).expect("ids");
        let g = tgt.decode(&row) == *want;
        let (tokens, _) = beam_search(model, &src.narrow(0, i as i64, 1), width, TGT_LEN);
        let b = tgt.decode(&tokens) == *want;
        c.greedy_right += usize::from(g);
        c.beam_right += usize::from(b);
        c.only_greedy += usize::from(g && !b);
        c.only_beam += usize::from(b && !g);
    }
    let n = truth.len();
    c.p_value = transformer_course::generate::two_rates_p_value((c.greedy_right, n), (c.beam_right, n));
    c
