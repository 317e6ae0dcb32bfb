"""The seam between the scheduler and a cluster: ClusterClient, in-memory and live."""
