"""SelectorSpread (framework/plugins/selectorspread/selector_spread.go, v1.21/v1.22; removed
upstream since). Legacy Policy's SelectorSpreadPriority."""

from kubesched.plugins.selectorspread.plugin import NAME, SelectorSpread, new

__all__ = ["NAME", "SelectorSpread", "new"]
