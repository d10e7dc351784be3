# The claims of the three abstracts, each tested on the run's tables by the study that states it
# (transformer_stability/<study>/claims): results/claims.csv, every term of every criterion with
# its interval (results/claim_terms.csv), and the HTML table the report's landing page opens on
# (results/report/claims.html; `make report` renders it again).


rule claims:
    input:
        tables=[f"results/{path}" for path in claim_tables(config)],
        sources=[*code("claims.py"), *claim_sources(config)],
    output:
        table=report(
            "results/claims.csv",
            caption="../report/claims.rst",
            category="Claims",
        ),
        terms="results/claim_terms.csv",
        page="results/report/claims.html",
    log:
        "results/logs/claims.log",
    localrule: True
    conda:
        "../../envs/pipeline.yaml"
    params:
        sections={name: config[name] for name in config["studies"]},
        seed=config["seed"],
    script:
        "../scripts/claims.py"
