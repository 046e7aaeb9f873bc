//! A corpus of secrets as they appear in what Claude Code's Bash tool runs (fakes of the real
//! formats: lengths, alphabets, prefixes; each token's literal is split so that no scanner
//! takes the source for a leak), and of ordinary commands that carry none. Shared by the
//! redaction tests of this crate and the end-to-end ones of the CLI.
#![allow(dead_code)]

/// `(script, the secrets in it)`: what Claude Code's Bash tool might run.
pub fn secret_scripts() -> Vec<(String, Vec<&'static str>)> {
    const GH: &str = concat!("gh", "p_", "R4nd0mT0k3nW1thTh1rtySixCh4r4ct3rsX");
    const GH_PAT: &str = concat!(
        "github",
        "_pat_",
        "11ABCDEFG0abcdefghij_klmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789ab"
    );
    const GHS: &str = concat!("gh", "s_", "16C7e42F292c6912E7710c838347Ae178B4a");
    const ANT: &str = concat!(
        "sk-",
        "ant-",
        "api03-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789-_AbCdEfGhIjKl"
    );
    const OPENAI: &str = concat!(
        "sk-",
        "proj-",
        "Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1HgFeDcBa0123456789abcdefT3BlbkFJ"
    );
    const AKIA: &str = "AKIAIOSFODNN7EXAMPLE";
    const AWS_SECRET: &str = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
    const SLACK: &str = concat!(
        "xo",
        "xb-",
        "123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx"
    );
    const HOOK: &str = "T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX";
    const JWT: &str = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U";
    const STRIPE: &str = concat!("sk_", "live_", "4eC39HqLyjWDarjtT1zdp7dc");
    const GLPAT: &str = concat!("gl", "pat-", "xxxxXXXXxxxx0000yyyy");
    const NPM: &str = concat!("np", "m_", "AbCdEfGhIjKlMnOpQrStUvWxYz0123456789");
    const HF: &str = concat!("h", "f_", "AbCdEfGhIjKlMnOpQrStUvWxYzAbCdEfGh");
    const GOOGLE: &str = concat!("AI", "za", "SyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q");
    vec![
        (
            format!("export GITHUB_TOKEN={GH} && gh pr create --fill"),
            vec![GH],
        ),
        (
            format!("GH_TOKEN='{GH_PAT}' gh repo clone org/repo"),
            vec![GH_PAT],
        ),
        (
            format!("git clone https://x-access-token:{GHS}@github.com/org/repo.git"),
            vec![GHS],
        ),
        (
            format!("ANTHROPIC_API_KEY={ANT} claude -p 'say hi'"),
            vec![ANT],
        ),
        (
            format!(
                "curl -s https://api.openai.com/v1/models -H \"Authorization: Bearer {OPENAI}\""
            ),
            vec![OPENAI],
        ),
        (
            format!(
                "aws configure set aws_access_key_id {AKIA} && aws configure set \
                 aws_secret_access_key {AWS_SECRET}"
            ),
            vec![AKIA, AWS_SECRET],
        ),
        (
            format!("AWS_SECRET_ACCESS_KEY={AWS_SECRET} aws s3 ls s3://bucket"),
            vec![AWS_SECRET],
        ),
        (
            "mysql -u root --password=hunter2-horse db < dump.sql".into(),
            vec!["hunter2-horse"],
        ),
        (
            "docker login registry.example.com -u deploy --password 'c0rrect h0rse'".into(),
            vec!["c0rrect h0rse"],
        ),
        (
            "psql postgresql://admin:S3cr3tPassw0rd@db.internal:5432/app -c 'select 1'".into(),
            vec!["S3cr3tPassw0rd"],
        ),
        (
            "PGPASSWORD=pg-pass-123 pg_dump -h db -U app app > app.sql".into(),
            vec!["pg-pass-123"],
        ),
        (
            "curl -u admin:adm1n-pass https://jenkins.example.com/api/json".into(),
            vec!["adm1n-pass"],
        ),
        (format!("SLACK_BOT_TOKEN={SLACK} node bot.js"), vec![SLACK]),
        (
            format!(
                "curl -X POST -d '{{\"text\":\"done\"}}' https://hooks.slack.com/services/{HOOK}"
            ),
            vec![HOOK],
        ),
        (
            format!("curl -H 'X-Auth: {JWT}' https://api.example.com/me"),
            vec![JWT],
        ),
        (
            format!("stripe charges list --api-key {STRIPE} --limit 3"),
            vec![STRIPE],
        ),
        (format!("GITLAB_TOKEN={GLPAT} glab mr list"), vec![GLPAT]),
        (
            format!("npm config set //registry.npmjs.org/:_authToken {NPM}"),
            vec![NPM],
        ),
        (
            format!("export HF_TOKEN={HF}; huggingface-cli whoami"),
            vec![HF],
        ),
        (
            format!("python deploy.py --api-key={GOOGLE} --region us"),
            vec![GOOGLE],
        ),
        (
            "git -c http.extraHeader=\"Authorization: Basic dXNlcjpwYXNzd29yZA==\" fetch".into(),
            vec!["dXNlcjpwYXNzd29yZA=="],
        ),
        (
            "curl \"https://api.example.com/items?access_token=tok-4f5a6b7c&page=2\"".into(),
            vec!["tok-4f5a6b7c"],
        ),
        (
            "claude --mcp-config '{\"mcpServers\":{\"gh\":{\"command\":\"gh-mcp\",\"env\":\
             {\"GITHUB_PERSONAL_ACCESS_TOKEN\":\"pat-in-json-123\"}}}}' -p hi"
                .into(),
            vec!["pat-in-json-123"],
        ),
        (
            "curl -H 'Cookie: session=sess-9f8e7d; csrftoken=csrf-1a2b' https://app".into(),
            vec!["sess-9f8e7d", "csrf-1a2b"],
        ),
        (
            "echo '-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END \
             OPENSSH PRIVATE KEY-----' > ~/.ssh/id_ed25519"
                .into(),
            vec!["b3BlbnNzaC1rZXktdjEAAAAA"],
        ),
        (
            "az storage blob upload --sas-token 'sv=2022-11-02&sig=AbC%2Fsig123' -f x".into(),
            vec!["AbC%2Fsig123"],
        ),
        (
            "DATABASE_URL=postgres://app:db-pw-777@localhost/app cargo sqlx migrate run".into(),
            vec!["db-pw-777"],
        ),
        (
            "git push https://oauth2:pushpw-42@gitlab.example.com/group/repo.git HEAD".into(),
            vec!["pushpw-42"],
        ),
    ]
}

/// Commands that carry no secret: they must come out as they went in.
pub fn ordinary_scripts() -> Vec<&'static str> {
    vec![
        "cargo test -p watchdog-core --test output_blocked -- --nocapture",
        "git push origin main && git log --author=me --since=2.weeks --oneline",
        "npm install --save-dev typescript@5 && npx tsc -p tsconfig.json",
        "pip install scikit-learn sk-video && python -m pytest -k 'not slow'",
        "sort --key=2 -t, data.csv | uniq -c | sort -rn | head",
        "python train.py --max-tokens 4096 --token-budget 100 --password-file ~/.pw",
        "cd $PWD && ls -la && export PATH=/usr/local/bin:$PATH",
        "curl -H \"Authorization: Bearer $GITHUB_TOKEN\" https://api.github.com/user",
        "curl -H 'Authorization: Bearer ${API_TOKEN}' https://example.com",
        "git clone git@github.com:org/repo.git && ssh deploy@host.example.com uptime",
        "docker run --rm --user 1000:1000 -v $PWD:/w -w /w node:20 npm test",
        "kubectl get secrets -n prod && kubectl describe pod web-1",
        "grep -rn \"password\" src/ --include=*.rs | wc -l",
        "echo \"token usage: 1234, cost: $0.12\"",
        "make -j8 PASSWORD_MIN_LENGTH=8 TOKENIZERS_PARALLELISM=false",
        "ssh-keygen -t ed25519 -f ~/.ssh/id_ed25519 --no-password",
        "git config user.email me@example.com && git commit -m 'fix: the bearer of bad news'",
        "curl http://localhost:8080/health && curl https://example.com/@user/posts",
        "rg --type rust 'fn secret_name' crates/",
        "task-runner --disk-usage --mask-secrets",
        "sleep 1000",
    ]
}
