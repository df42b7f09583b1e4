package coord_test

const contenderEnv = "TABLEKIT_COORD_CONTENDER"

func contenderProcess(cfg string) int { return 2 }
