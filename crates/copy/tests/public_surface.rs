//! The public surface of krec-copy: the listing in `public-surface.txt` and the crate docs'
//! "Public surface" section say what it is. A new public item fails this test until both say
//! so (rewrite the listing with `KREC_BLESS_SURFACE=1 cargo test -p krec-copy --test
//! public_surface`).

#[test]
fn the_public_surface_is_the_one_listed_and_documented() {
    let crate_dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    krec_testkit::surface::check(crate_dir, "krec_copy", "public-surface.txt");
}
