//! The README's generated sections must match the code they describe.

fn section(readme: &str, name: &str) -> String {
    let start = format!("<!-- {name}:start -->\n");
    let end = format!("<!-- {name}:end -->");
    let a = readme
        .find(&start)
        .unwrap_or_else(|| panic!("README lacks {start}"))
        + start.len();
    let b = readme[a..]
        .find(&end)
        .unwrap_or_else(|| panic!("README lacks {end}"))
        + a;
    readme[a..b].to_string()
}

#[test]
fn readme_api_table_is_generated_from_the_api_table() {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    assert_eq!(
        section(&readme, "api-table"),
        strata::handlers::api_table_markdown(),
        "regenerate with: cargo run -q -- api-table"
    );
}

#[test]
fn readme_config_table_is_generated_from_the_registry() {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    assert_eq!(
        section(&readme, "config-keys"),
        strata::handlers::config_table_markdown(),
        "regenerate with: cargo run -q -- config-keys"
    );
}
