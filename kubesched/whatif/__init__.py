"""The what-if tools capacity planners reach for, on the same faithful engine as `simulate`:
how many more copies of a pod fit (capacity), the same cluster under several configurations
(compare), the optimal packing of the pending pods as an integer program (pack), and a
self-contained HTML report of any of them (report)."""
