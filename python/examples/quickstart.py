"""The README's Python example, runnable from the repository's top level:

    python python/examples/quickstart.py
"""
import pandas as pd
from datafusion import SessionContext

import datafusion_kendall as dk

# SQL, as in the command-line shell. The kendall.* options (SET) go in with
# the configuration the context is built from.
ctx = SessionContext(dk.session_config())
dk.register(ctx)  # kendall_all_pairs, _top_partners, _cross_pairs, _candidate_pairs
ctx.sql("SET kendall.variant = 'c'")
net = ctx.sql("""SELECT gene_i, gene_j, tau
                 FROM kendall_all_pairs('data/demo_expression.parquet')
                 WHERE abs(tau) >= 0.8""").to_pandas()
print(f"{len(net)} pairs with |tau_c| >= 0.8")

# A frame already in memory: register it, then name it like a file.
expr_df = pd.read_parquet("data/demo_expression.parquet")  # genes x samples
ctx.from_pandas(expr_df, name="expr")
strong = ctx.sql("SELECT * FROM kendall_all_pairs('expr') WHERE p_value < 1e-6").to_pandas()
print(f"{len(strong)} pairs with p < 1e-6")

# pandas' corr, fast: samples x genes in, one row per pair out.
frame = expr_df.set_index("gene_id").T
pairs = dk.corr(frame, threshold=0.8)
print(pairs.sort_values("tau", ascending=False).head())
square = dk.corr(frame.iloc[:, :100], square=True)  # like frame.corr(method="kendall")
print(square.iloc[:3, :3])
