//! `#[counted]`: the lesson's functions that an exercise replaces report each call
//! to the exercises' counters (the `counted` crate, which re-exports this attribute), so a test can see that
//! a solution did the work itself rather than call the course's version, however
//! the call was reached (a closure, a helper module, a re-export).
//!
//! The attribute sits above the `// ANCHOR:` line of the function's listing (an
//! attribute may be separated from its item by comments), so the book's listings do
//! not show it; where a function sits inside a larger listing, the book's
//! `flush-left` preprocessor drops the line instead.
use proc_macro::TokenStream;
use quote::quote;
use syn::parse::{Parse, ParseStream};
use syn::{parse_macro_input, Expr, Ident, ItemFn, LitStr, Token};

/// Counts the calls of the function it is put on under its name, or under the
/// name given (`#[counted("Encoder::forward")]`, for methods, whose type the
/// attribute cannot see). The expansion is one call of `::counted::count`, so the
/// crate using it depends on `counted`.
///
/// `keep = EXPR` also hands `::counted::keep` a closure that makes a value from
/// the arguments (`#[counted("exact_match", keep = src.shallow_clone())]`), for a
/// test that must see what a solution passed, not only how often; the closure
/// runs only while a test keeps (`counted::keeping`).
#[proc_macro_attribute]
pub fn counted(attr: TokenStream, item: TokenStream) -> TokenStream {
    let mut f = parse_macro_input!(item as ItemFn);
    let args = parse_macro_input!(attr as Args);
    let name = args
        .name
        .map_or_else(|| f.sig.ident.to_string(), |n| n.value());
    let body = &f.block;
    f.block = match args.keep {
        None => syn::parse_quote!({
            ::counted::count(#name);
            #body
        }),
        Some(keep) => syn::parse_quote!({
            ::counted::count(#name);
            ::counted::keep(#name, || #keep);
            #body
        }),
    };
    quote!(#f).into()
}

/// `["name"] [, keep = EXPR]`.
struct Args {
    name: Option<LitStr>,
    keep: Option<Expr>,
}

impl Parse for Args {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let name = if input.peek(LitStr) {
            Some(input.parse::<LitStr>()?)
        } else {
            None
        };
        if name.is_some() && !input.is_empty() {
            input.parse::<Token![,]>()?;
        }
        let mut keep = None;
        if !input.is_empty() {
            let word: Ident = input.parse()?;
            if word != "keep" {
                return Err(syn::Error::new(
                    word.span(),
                    "expected `keep = EXPR`",
                ));
            }
            input.parse::<Token![=]>()?;
            keep = Some(input.parse::<Expr>()?);
        }
        Ok(Args { name, keep })
    }
}
