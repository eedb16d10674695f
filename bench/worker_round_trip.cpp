// The host's cost of one request to the worker (write a line, the worker parses it, runs nothing
// or one call of a tiny op, replies): what the protocol adds per call, which bounds how small a
// batch can be. Starts the worker as opmeter does (OPMETER_PYTHON, OPMETER_WORKER).
// usage: worker_round_trip [requests]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "util/private_temp.hpp"
#include "worker/shared_worker.hpp"

using namespace opmeter::worker;
using Clock = std::chrono::steady_clock;

int main(int argc, char** argv) {
  const int requests = argc > 1 ? std::atoi(argv[1]) : 2000;
  auto& w = shared_worker();
  // An empty-bodied request (`release` with no case) and a one-call `sample` of an 8-element relu
  // need a case: set one up from a file of 8 floats.
  const std::string in = (opmeter::private_temp_dir() / "round_trip_in").string();  // not a guessable /tmp name
  float x[8] = {-1, 2, -3, 4, -5, 6, -7, 8};
  opmeter::write_new_file(in, x, sizeof x);
  auto reply = w.request({{"cmd", "setup"}, {"impl", "torch"}, {"op", "relu"}, {"dtype", "fp32"},
                          {"params", {{"batch", "1"}, {"seq", "1"}, {"hidden", "8"}}}, {"device", "cpu"}, {"threads", 1},
                          {"copies", 1}, {"hot", true}, {"graph", 0},
                          {"inputs", {{{"name", "x"}, {"elem", "f32"}, {"count", 8}, {"path", in}}}},
                          {"output", {{"name", "out"}, {"elem", "f32"}, {"count", 8}}}},
                         600);
  if (!reply.value("ok", false)) {
    std::fprintf(stderr, "setup failed: %s\n", reply.dump().c_str());
    return 1;
  }
  std::vector<double> trip, inside;
  for (int i = 0; i < requests; ++i) {
    auto t0 = Clock::now();
    auto r = w.request({{"cmd", "sample"}, {"calls", 1}, {"cold", false}}, 60);
    trip.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
    inside.push_back(r.at("seconds").get<double>());
  }
  auto median = [](std::vector<double> v) {
    std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
    return v[v.size() / 2];
  };
  double t = median(trip), timed = median(inside);
  std::printf("requests %d: round trip median %.1f us, of which the timed call %.1f us: protocol %.1f us per sample\n",
              requests, t * 1e6, timed * 1e6, (t - timed) * 1e6);
  return 0;
}
