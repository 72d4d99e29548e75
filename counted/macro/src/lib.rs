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
use syn::{parse_macro_input, ItemFn, LitStr};

/// Counts the calls of the function it is put on under its name, or under the
/// name given (`#[counted("Encoder::forward")]`, for methods, whose type the
/// attribute cannot see). The expansion is one call of `::counted::count`, so the
/// crate using it depends on `counted`.
#[proc_macro_attribute]
pub fn counted(attr: TokenStream, item: TokenStream) -> TokenStream {
    let mut f = parse_macro_input!(item as ItemFn);
    let name = if attr.is_empty() {
        f.sig.ident.to_string()
    } else {
        parse_macro_input!(attr as LitStr).value()
    };
    let body = &f.block;
    f.block = syn::parse_quote!({
        ::counted::count(#name);
        #body
    });
    quote!(#f).into()
}
