#include "worker/engine/rank_main.h"

int main(int argc, char** argv) { return collbench::RunRankMain(argc, argv); }
