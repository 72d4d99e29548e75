// Wrong solutions of ex08_copy_dataset.

// MUTANT: no_bos — the target is the source itself, without BOS in front
    let reverse = make_dataset(n, seed);
    let tgt = reverse.src.copy();
    ReverseDataset { src: reverse.src, tgt }

// MUTANT: drops_first_digit — shifts by narrowing from column 1 instead of 0
    let reverse = make_dataset(n, seed);
    let bos = Tensor::full([n as i64, 1], BOS_ID, (Kind::Int64, Device::Cpu));
    let tgt = Tensor::cat(&[bos, reverse.src.narrow(1, 1, SEQ_LEN as i64 - 1)], 1);
    ReverseDataset { src: reverse.src, tgt }

// MUTANT: other_seed — builds the sources from seed + 1
    let reverse = make_dataset(n, seed + 1);
    let bos = Tensor::full([n as i64, 1], BOS_ID, (Kind::Int64, Device::Cpu));
    let tgt = Tensor::cat(&[bos, reverse.src.narrow(1, 0, SEQ_LEN as i64 - 1)], 1);
    ReverseDataset { src: reverse.src, tgt }

// MUTANT: reversal_target — keeps make_dataset's reversal target
    make_dataset(n, seed)

// MUTANT: rows_reversed — the targets of the batch in reverse order: row i gets row n−1−i's copy
    let reverse = make_dataset(n, seed);
    let bos = Tensor::full([n as i64, 1], BOS_ID, (Kind::Int64, Device::Cpu));
    let shifted = reverse.src.narrow(1, 0, SEQ_LEN as i64 - 1).flip([0]);
    let tgt = Tensor::cat(&[bos, shifted], 1);
    ReverseDataset { src: reverse.src, tgt }

// MUTANT: fresh_sources — draws new sources of its own with the seed, not make_dataset's
    let reverse = make_dataset(n, seed ^ 0x5eed);
    let bos = Tensor::full([n as i64, 1], BOS_ID, (Kind::Int64, Device::Cpu));
    let tgt = Tensor::cat(&[bos, reverse.src.narrow(1, 0, SEQ_LEN as i64 - 1)], 1);
    ReverseDataset { src: reverse.src, tgt }
