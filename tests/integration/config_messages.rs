//! Regression tests of configuration messages and values found by a tester: empty secrets,
//! `.env` errors with their line, a byte order mark, sources named per problem.

use predicates::prelude::*;

use crate::util::TestProject;

#[test]
fn an_empty_api_key_is_unset() {
    let project = TestProject::init();
    project
        .cmd()
        .env("OVERBRAINER_PROVIDERS__OPENROUTER__API_KEY", "")
        .args(["config", "check"])
        .assert()
        .success()
        .stdout(predicate::str::contains(
            "providers.openrouter.api_key = (unset)",
        ));
    project.write(".env", "OVERBRAINER_RUNPOD__API_KEY=\n");
    project
        .cmd()
        .args(["config", "check"])
        .assert()
        .success()
        .stdout(predicate::str::contains("runpod.api_key = (unset)"));
}

#[test]
fn a_broken_substitution_in_dotenv_names_its_line() {
    let project = TestProject::init();
    project.write(".env", "# comment\nA=1\nC=${x\n");
    project
        .cmd()
        .args(["config", "check"])
        .assert()
        .failure()
        .stderr(predicate::str::contains("line 3"));
}

#[test]
fn a_byte_order_mark_at_the_start_of_dotenv_is_skipped() {
    let project = TestProject::init();
    project.write(
        ".env",
        "\u{feff}OVERBRAINER_PROVIDERS__OPENROUTER__BASE_URL=http://bom.test\n",
    );
    project
        .cmd()
        .args(["config", "check"])
        .assert()
        .success()
        .stdout(predicate::str::contains("http://bom.test"));
}
