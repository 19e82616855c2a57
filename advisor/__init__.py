"""Workload-driven design advisor for transactional streaming deployments.

    from advisor.api import recommend
    rec = recommend("tpcdi-trade", machines=4)
    rec.design.save("design.json")
"""
__version__ = "0.1.0"
