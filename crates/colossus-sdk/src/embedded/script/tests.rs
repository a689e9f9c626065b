use super::*;

#[test]
fn parses_the_documented_example() {
    let steps = parse(
        "colossus-script v1\nsay Looking at the repository.\\n\ntool git.status\n# a comment\n\n\
             ask Which branch should I use? | main | release\napprove shell.run\nsay Done.",
    )
    .unwrap();
    assert_eq!(
        steps,
        vec![
            Step::Say("Looking at the repository.\n".into()),
            Step::Tool {
                tool: "git.status".into(),
                fail: false
            },
            Step::Ask {
                question: "Which branch should I use?".into(),
                choices: vec!["main".into(), "release".into()]
            },
            Step::Approve {
                tool: "shell.run".into(),
                origin: None
            },
            Step::Say("Done.".into()),
        ]
    );
}

#[test]
fn repeat_sleep_fail_and_escaped_bars() {
    let steps = parse("colossus-script v1\nrepeat 3 say x\nsleep 5\nsleep forever\nfail boom it broke\nask a\\|b | c").unwrap();
    assert_eq!(steps.len(), 7);
    assert_eq!(steps[3], Step::Sleep(Some(5)));
    assert_eq!(steps[4], Step::Sleep(None));
    assert_eq!(
        steps[5],
        Step::Fail {
            code: "boom".into(),
            message: "it broke".into()
        }
    );
    assert_eq!(
        steps[6],
        Step::Ask {
            question: "a|b".into(),
            choices: vec!["c".into()]
        }
    );
}

#[test]
fn bad_lines_are_named() {
    assert_eq!(
        parse("colossus-script v1\nsay ok\ndance").unwrap_err(),
        "line 3: unknown step \"dance\""
    );
    assert!(
        parse("colossus-script v1\ntool rm.rf")
            .unwrap_err()
            .starts_with("line 2")
    );
    assert!(parse("colossus-script v1\nask q | a | a").is_err());
    assert!(parse("colossus-script v1\nsleep 600001").is_err());
    assert!(parse("colossus-script v1\nfail Bad").is_err());
    assert!(parse("colossus-script v1\napprove web.fetch http://x").is_err());
    assert!(parse("colossus-script v1\napprove web.fetch https://example.org:8443").is_ok());
}
