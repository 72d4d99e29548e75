// Wrong solutions of ex01_learned_forward.

// MUTANT: no_scale — forgets the × √d_model of the token embedding
        let l = ids.size()[1];
        (ids.apply(&self.emb) + self.pos.narrow(0, 0, l)).dropout(self.dropout, train)

// MUTANT: rows_off_by_one — takes rows 1..=L of the table instead of 0..L
        let l = ids.size()[1];
        let tokens = ids.apply(&self.emb) * (self.d_model as f64).sqrt();
        (tokens + self.pos.narrow(0, 1, l)).dropout(self.dropout, train)

// MUTANT: always_dropout — drops out in inference too
        let l = ids.size()[1];
        let tokens = ids.apply(&self.emb) * (self.d_model as f64).sqrt();
        (tokens + self.pos.narrow(0, 0, l)).dropout(self.dropout, true)

// MUTANT: whole_table — adds all max_len rows of the table, whatever the length L
    let tokens = ids.apply(&self.emb) * (self.d_model as f64).sqrt();
    (tokens + &self.pos).dropout(self.dropout, train)
