-- Drives one pktgen through numbered rounds without a person at the
-- keyboard, for tests/dpdk/cases/pktgen.sh and benches/pktgen-smoke.sh.
--
-- The line put before this file sets CTL, a directory shared with the
-- script that runs pktgen (a bind mount when pktgen runs in a container).
-- Round N starts when CTL/go.N appears, holding one command:
--
--   send PORTS SIZE MS DST...   set each port of the list PORTS (pktgen's
--                               syntax: 0, 0-3, all) to frames of SIZE bytes
--                               (pktgen's size, with the 4-byte FCS) to the
--                               MAC DST (one per port, in order), start
--                               them, send for MS ms, stop them
--   idle                        send nothing (the far end sends)
--   quit                        leave pktgen
--
-- After send or idle, once pktgen's port counters are still (pktgen
-- refreshes them once a second; two refreshes without a change), their
-- values for every port (cumulative since start) are written to
-- CTL/done.N, one line a port:
--
--   port P opackets N obytes N ipackets N ibytes N ierrors N oerrors N imissed N
--
-- The file appears whole (written beside it, then renamed).

local function exists(path)
    local f = io.open(path, "r")
    if f then
        f:close()
        return true
    end
    return false
end

local function slurp(path)
    local f = assert(io.open(path, "r"))
    local s = f:read("a")
    f:close()
    return s
end

local function words(s)
    local w = {}
    for x in s:gmatch("%S+") do
        w[#w + 1] = x
    end
    return w
end

local function wait_file(path)
    while not exists(path) do
        pktgen.delay(50)
    end
end

-- Every port's counters, indexed by port, with n the number of ports.
-- pktgen up to 24.10 takes the kind of counters ("port"); 26.02 takes the
-- port list only and keeps each port's counters under "curr".
local function counts()
    local ok, c = pcall(pktgen.portStats, "all", "port")
    if ok then
        return c
    end
    local t = pktgen.portStats("all")
    local r = { n = t.n }
    for p = 0, t.n - 1 do
        r[p] = t[p].curr
    end
    return r
end

local KEYS = { "opackets", "obytes", "ipackets", "ibytes", "ierrors", "oerrors", "imissed" }

local function same(a, b)
    if a.n ~= b.n then
        return false
    end
    for p = 0, a.n - 1 do
        for _, k in ipairs(KEYS) do
            if a[p][k] ~= b[p][k] then
                return false
            end
        end
    end
    return true
end

local function settled()
    local last = counts()
    local still = 0
    while still < 2 do
        pktgen.delay(1100)
        local now = counts()
        if same(now, last) then
            still = still + 1
        else
            still = 0
        end
        last = now
    end
    return last
end

local function report(path, c)
    local lines = {}
    for p = 0, c.n - 1 do
        local s = c[p]
        local l = "port " .. p
        for _, k in ipairs(KEYS) do
            l = l .. " " .. k .. " " .. string.format("%d", s[k])
        end
        lines[#lines + 1] = l
    end
    local f = assert(io.open(path .. ".tmp", "w"))
    f:write(table.concat(lines, "\n") .. "\n")
    f:close()
    assert(os.rename(path .. ".tmp", path))
end

-- Waits (at most 5 s) until pktgen itself sees every port of PORTS up:
-- it learns the link state by polling it, after the driver has logged it,
-- and a start before that may send nothing.
local function link_up(ports)
    for _ = 1, 50 do
        local ok, st = pcall(pktgen.linkState, ports)
        local up = ok and type(st) == "table"
        if up then
            for k, v in pairs(st) do
                if k ~= "n" and not tostring(v):find("UP", 1, true) then
                    up = false
                end
            end
        end
        if up then
            return
        end
        pktgen.delay(100)
    end
end

local round = 1
while true do
    local go = CTL .. "/go." .. round
    wait_file(go)
    local w = words(slurp(go))
    if w[1] == "quit" then
        break
    elseif w[1] == "send" then
        local ports, size, ms = w[2], tonumber(w[3]), tonumber(w[4])
        local first = tonumber(ports:match("^%d+")) or 0
        for i = 5, #w do
            pktgen.set_mac(tostring(first + i - 5), "dst", w[i])
        end
        pktgen.set(ports, "size", size)
        link_up(ports)
        pktgen.start(ports)
        pktgen.delay(ms)
        pktgen.stop(ports)
    end
    report(CTL .. "/done." .. round, settled())
    round = round + 1
end
pktgen.quit()
