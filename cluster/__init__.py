"""Ray: connect or start a cluster, place one PairActor per pair per GPU."""
