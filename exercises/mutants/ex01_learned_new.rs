// Wrong solutions of ex01_learned_new.

// MUTANT: plain_tensor — the table is a plain tensor, not a variable: never trained
        let emb = TokenAndPosition::new(&p / "tok", vocab_size, cfg).emb;
        let pos = Tensor::randn([cfg.max_len, cfg.d_model], (Kind::Float, p.device())) * 0.02;
        LearnedPositions { emb, pos, d_model: cfg.d_model, dropout: cfg.dropout }

// MUTANT: fresh_embedding — nn::embedding's own init: N(0, 1) and a non-zero PAD row
        let emb = nn::embedding(&p / "tok", vocab_size, cfg.d_model, Default::default());
        let init = nn::Init::Randn { mean: 0.0, stdev: 0.02 };
        let pos = p.var("pos", &[cfg.max_len, cfg.d_model], init);
        LearnedPositions { emb, pos, d_model: cfg.d_model, dropout: cfg.dropout }

// MUTANT: config_vocab — sizes the token table by cfg.src_vocab instead of the vocab_size it is given
    let emb = TokenAndPosition::new(&p / "tok", cfg.src_vocab, cfg).emb;
    let init = nn::Init::Randn { mean: 0.0, stdev: 0.02 };
    let pos = p.var("pos", &[cfg.max_len, cfg.d_model], init);
    let _ = vocab_size;
    LearnedPositions { emb, pos, d_model: cfg.d_model, dropout: cfg.dropout }

// MUTANT: course_max_len — a table of the course's max_len (14 rows) instead of cfg.max_len
    let emb = TokenAndPosition::new(&p / "tok", vocab_size, cfg).emb;
    let init = nn::Init::Randn { mean: 0.0, stdev: 0.02 };
    let rows = TransformerConfig::reverse_task().max_len;
    let pos = p.var("pos", &[rows, cfg.d_model], init);
    LearnedPositions { emb, pos, d_model: cfg.d_model, dropout: cfg.dropout }
